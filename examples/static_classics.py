"""The classic static-graph programs: build a graph once, run it many times with a Session.

1. Minimise log((x - 7)**2 + 10) by gradient descent (the minimum is at x = 7).
2. Minimise 0.5 x^2 + x y + 0.5 y^2 - 2 x - 2 y, which is 0.5 (x + y)^2 - 2 (x + y): a whole
   line of minima x + y = 2 (value -2). Both variables are updated in one run, and every read
   of that run sees the values from before its updates, so this is true gradient descent.
3. Logistic regression on placeholders with an unknown batch size, trained with assign on a
   synthetic data set made with NumPy, then evaluated on a held-out batch of another size.
4. sigmoid((y - y')**2 / 2) and its gradient, checked against eager mode.

Each program builds its graph once; the training loops only call `Session.run`, so they add
no nodes (the functions return the node counts to show it).

Run: python examples/static_classics.py
"""

from __future__ import annotations

import numpy as np

import dagrad as dg


def minimise_log(steps=1000, lr=1.0, start=0.0):
    """Gradient descent on log((x - 7)**2 + 10); returns x, the loss and the node counts."""
    graph = dg.Graph()
    with graph:
        x = dg.Variable(start, name="x")
        loss = dg.log((x - 7.0) ** 2 + 10.0)
        grad_x = dg.gradients(loss, x)
        step = x.assign_sub(lr * grad_x)
    built = len(graph)
    sess = dg.Session(graph)
    for _ in range(steps):
        sess.run(step)
    return {"x": float(x.value), "loss": float(sess.run(loss)), "nodes_built": built, "nodes_after": len(graph),
            "graph": graph}


def minimise_quadratic(steps=1000, lr=0.1, start=(0.0, 0.0)):
    """Gradient descent on 0.5 x^2 + x y + 0.5 y^2 - 2 x - 2 y, both variables updated at once."""
    graph = dg.Graph()
    with graph:
        x = dg.Variable(start[0], name="x")
        y = dg.Variable(start[1], name="y")
        loss = 0.5 * x**2 + x * y + 0.5 * y**2 - 2.0 * x - 2.0 * y
        gx, gy = dg.gradients(loss, [x, y])
        train = dg.group(x.assign_sub(lr * gx), y.assign_sub(lr * gy), name="train")
    built = len(graph)
    sess = dg.Session(graph)
    for _ in range(steps):
        sess.run(train)
    return {"x": float(x.value), "y": float(y.value), "loss": float(sess.run(loss)), "nodes_built": built,
            "nodes_after": len(graph), "graph": graph}


TRUE_W = np.array([2.0, -3.0, 1.0])
TRUE_B = 0.5


def make_classification(n, seed):
    """n points in 3-D, labelled 1 with probability sigmoid(x . TRUE_W + TRUE_B)."""
    rng = np.random.default_rng(seed)
    features = rng.standard_normal((n, 3))
    p = 1.0 / (1.0 + np.exp(-(features @ TRUE_W + TRUE_B)))
    labels = (rng.uniform(size=n) < p).astype(np.float64)
    return features, labels


def logistic_regression(steps=500, lr=0.5, n_train=400, n_test=1000):
    """Logistic regression on (None, 3) / (None,) placeholders, trained with assign."""
    graph = dg.Graph()
    with graph:
        features = dg.placeholder((None, 3), name="features")
        labels = dg.placeholder((None,), name="labels")
        w = dg.Variable(np.zeros(3), name="w")
        b = dg.Variable(0.0, name="b")
        logits = features @ w + b
        # -mean(y log p + (1 - y) log(1 - p)) with p = sigmoid(z), written without overflow
        loss = dg.mean(dg.softplus(logits) - labels * logits)
        accuracy = dg.mean(dg.astype((logits > 0) == (labels > 0.5), np.float64))
        gw, gb = dg.gradients(loss, [w, b])
        train = dg.group(w.assign_sub(lr * gw), b.assign_sub(lr * gb), name="train")
    built = len(graph)
    sess = dg.Session(graph)
    train_x, train_y = make_classification(n_train, seed=0)
    test_x, test_y = make_classification(n_test, seed=1)
    for _ in range(steps):
        sess.run(train, {features: train_x, labels: train_y})
    train_loss = sess.run(loss, {features: train_x, labels: train_y})
    test_loss, test_accuracy = sess.run([loss, accuracy], {features: test_x, labels: test_y})
    # the best any classifier can do here: predict with the true weights
    bayes_accuracy = float(np.mean(((test_x @ TRUE_W + TRUE_B) > 0) == (test_y > 0.5)))
    return {"w": w.value.copy(), "b": float(b.value), "train_loss": float(train_loss),
            "test_loss": float(test_loss), "test_accuracy": float(test_accuracy),
            "bayes_accuracy": bayes_accuracy, "nodes_built": built, "nodes_after": len(graph), "graph": graph}


def sigmoid_square_error(y=(0.5, -1.0, 2.0), target=(1.0, 1.0, 1.0)):
    """sigmoid((y - y')**2 / 2) and its gradient in y, from a static graph and from eager mode."""
    y, target = np.asarray(y, dtype=np.float64), np.asarray(target, dtype=np.float64)
    graph = dg.Graph()
    with graph:
        pred = dg.placeholder((None,), name="y")
        true = dg.placeholder((None,), name="y_true")
        out = dg.sigmoid((pred - true) ** 2 / 2)
        (grad,) = dg.gradients(out, [pred])  # d sum(out) / dy: elementwise, so the gradient of each entry
    value, gradient = dg.Session(graph).run((out, grad), {pred: y, true: target})
    eager_value, eager_vjp = dg.vjp(lambda p: dg.sigmoid((p - target) ** 2 / 2), y)
    s = 1.0 / (1.0 + np.exp(-((y - target) ** 2) / 2))
    by_hand = s * (1 - s) * (y - target)  # sigmoid' (u) * du/dy with u = (y - y')^2 / 2
    return {"value": value, "gradient": gradient, "eager_value": eager_value,
            "eager_gradient": eager_vjp(np.ones_like(y))[0], "by_hand": by_hand, "graph": graph}


def main():
    r = minimise_log()
    print("1. minimise log((x - 7)^2 + 10), 1,000 steps of gradient descent")
    print(f"   x = {r['x']:.6f} (exact 7), loss = {r['loss']:.6f} (exact log 10 = {np.log(10):.6f})")
    print(f"   graph: {r['nodes_built']} nodes after building, {r['nodes_after']} after 1,000 runs")
    print("\n   the graph:")
    print("   " + str(r["graph"]).replace("\n", "\n   "))

    r = minimise_quadratic()
    print("\n2. minimise 0.5x^2 + xy + 0.5y^2 - 2x - 2y, 1,000 steps")
    print(f"   (x, y) = ({r['x']:.6f}, {r['y']:.6f}), loss = {r['loss']:.6f} (minimum -2 on the line x + y = 2)")
    print(f"   graph: {r['nodes_built']} nodes after building, {r['nodes_after']} after 1,000 runs")

    r = logistic_regression()
    print("\n3. logistic regression on placeholders (None, 3) and (None,), 500 steps")
    print(f"   w = {np.round(r['w'], 3)}, b = {r['b']:.3f} (true w = {TRUE_W}, b = {TRUE_B})")
    print(f"   train loss {r['train_loss']:.4f}; held-out loss {r['test_loss']:.4f}, accuracy "
          f"{r['test_accuracy']:.3f} (the true weights: {r['bayes_accuracy']:.3f})")
    print(f"   graph: {r['nodes_built']} nodes after building, {r['nodes_after']} after training")

    r = sigmoid_square_error()
    print("\n4. sigmoid((y - y')^2 / 2) and its gradient")
    print(f"   value    {np.round(r['value'], 6)}  (eager {np.round(r['eager_value'], 6)})")
    print(f"   gradient {np.round(r['gradient'], 6)}  (eager {np.round(r['eager_gradient'], 6)}, "
          f"by hand {np.round(r['by_hand'], 6)})")
    print("\n   the graph:")
    print("   " + str(r["graph"]).replace("\n", "\n   "))


if __name__ == "__main__":
    main()
