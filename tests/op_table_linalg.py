"""Op-table rows for linear algebra (appended to op_table.CASES)."""

from __future__ import annotations

from op_table import case  # noqa: F401
