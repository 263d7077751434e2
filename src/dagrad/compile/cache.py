"""A bounded, thread-safe cache of compiled code (the least recently used entry dropped first)."""

from __future__ import annotations

import itertools
import threading


class LRUCache:
    """At most `size` entries; beyond that `put` drops the least recently used one.

    Safe to share between threads: `put` (insertion and eviction) holds a lock; `get` is one
    dict lookup and a time stamp, each atomic, so the hot path takes no lock. The work that
    makes a value (tracing, code generation) happens outside the lock, and when two threads
    make the value of one key, both get the one stored first.

    >>> cache = LRUCache(2)
    >>> cache.put("a", 1), cache.put("b", 2), cache.get("a"), cache.put("c", 3)
    (1, 2, 1, 3)
    >>> cache.keys()  # "b" was the least recently used
    ['a', 'c']
    """

    def __init__(self, size):
        self.size = size
        self._entries = {}  # key -> [value, time of last use]
        self._clock = itertools.count()
        self._lock = threading.Lock()

    def get(self, key, default=None):
        item = self._entries.get(key)
        if item is None:
            return default
        item[1] = next(self._clock)
        return item[0]

    def put(self, key, value):
        """Stores `value` under `key` unless another thread stored one first; returns the stored one."""
        with self._lock:
            item = self._entries.setdefault(key, [value, 0])
            item[1] = next(self._clock)
            while len(self._entries) > self.size:
                oldest = min(self._entries, key=lambda k: self._entries[k][1])
                del self._entries[oldest]
            return item[0]

    def keys(self):
        """The keys, least recently used first."""
        with self._lock:
            return [k for k, _ in sorted(self._entries.items(), key=lambda kv: kv[1][1])]

    def values(self):
        """The values, least recently used first."""
        with self._lock:
            return [item[0] for item in sorted(self._entries.values(), key=lambda item: item[1])]

    def __len__(self):
        return len(self._entries)

    def clear(self):
        """Drops every entry (a closed Session releases its compiled code)."""
        with self._lock:
            self._entries.clear()

    def discard(self, key):
        """Drops `key`'s entry, if any."""
        with self._lock:
            self._entries.pop(key, None)
