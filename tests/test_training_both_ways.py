"""docs/nn.md's claim: one model trained eagerly (modules, backward, SGD) and in a static graph
(Variables, minimize, Session) from the same weights reaches the same loss, bit for bit."""

from __future__ import annotations

import numpy as np

import dagrad as dg
from dagrad import nn
from dagrad.data import load_digits
from dagrad.nn import functional as F


def test_eager_and_static_training_agree_bit_for_bit():
    images, labels = load_digits()
    x_all, y_all = images.reshape(-1, 64)[:640], labels[:640]
    nn.init.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 32), nn.Tanh(), nn.Linear(32, 10))
    start = model.state_dict()
    opt = dg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    with dg.Graph() as g:
        x = dg.placeholder((None, 64), name="x")
        y = dg.placeholder((None,), dtype="int64", name="y")
        params = {k: dg.Variable(v, name=k) for k, v in start.items()}
        logits = F.linear(dg.tanh(F.linear(x, params["0.weight"], params["0.bias"])), params["2.weight"],
                          params["2.bias"])
        loss_node = F.cross_entropy(logits, y)
        train = dg.optim.SGD(list(params.values()), lr=0.1, momentum=0.9).minimize(loss_node)
    sess = dg.Session(g)
    for _ in range(2):
        for k in range(0, 640, 64):
            loss = F.cross_entropy(model(dg.tensor(x_all[k:k + 64])), y_all[k:k + 64])
            opt.zero_grad()
            loss.backward()
            opt.step()
            value, _ = sess.run([loss_node, train], {x: x_all[k:k + 64], y: y_all[k:k + 64]})
            assert value == loss.item()
    for key, variable in params.items():
        np.testing.assert_array_equal(variable.value, model.state_dict()[key])
