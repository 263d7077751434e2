"""TensorFlow 1 programs run with `import tensorflow as tf` changed to `import dagrad.compat.v1 as tf` and
nothing else, and match NumPy; and the names of `dagrad.compat.v1` one by one (docs/coming-from.md,
"TensorFlow 1").

Each program below is a TF1 tutorial's text (Aymeric Damien's TensorFlow-Examples linear and logistic
regressions, TensorFlow's mnist_softmax.py) without its plotting; the tutorials download MNIST, so the
test puts MNIST-shaped synthetic data where `input_data.read_data_sets` finds it (a stand-in module under
the name `tensorflow.examples.tutorials.mnist`).
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import dagrad as dg
import dagrad.compat.v1 as tf

TF_IMPORT = "import tensorflow as tf\n"


def _run(program, monkeypatch, seed=0):
    """Runs a TF1 program with its import line changed (and only that), in a fresh default graph; returns its
    global names."""
    assert program.count(TF_IMPORT) == 1
    source = program.replace(TF_IMPORT, "import dagrad.compat.v1 as tf\n")
    np.random.seed(seed)
    namespace = {"__name__": "tf1_program"}
    with dg.Graph():
        exec(compile(source, "<tf1 program>", "exec"), namespace)  # noqa: S102  (the test's own program text)
    return namespace


LINEAR_REGRESSION = '''
import tensorflow as tf
import numpy
rng = numpy.random

# Parameters
learning_rate = 0.01
training_epochs = 1000
display_step = 50

# Training Data
train_X = numpy.asarray([3.3,4.4,5.5,6.71,6.93,4.168,9.779,6.182,7.59,2.167,
                         7.042,10.791,5.313,7.997,5.654,9.27,3.1])
train_Y = numpy.asarray([1.7,2.76,2.09,3.19,1.694,1.573,3.366,2.596,2.53,1.221,
                         2.827,3.465,1.65,2.904,2.42,2.94,1.3])
n_samples = train_X.shape[0]

# tf Graph Input
X = tf.placeholder("float")
Y = tf.placeholder("float")

# Set model weights
W = tf.Variable(rng.randn(), name="weight")
b = tf.Variable(rng.randn(), name="bias")

# Construct a linear model
pred = tf.add(tf.multiply(X, W), b)

# Mean squared error
cost = tf.reduce_sum(tf.pow(pred-Y, 2))/(2*n_samples)
# Gradient descent
#  Note, minimize() knows to modify W and b because Variable objects are trainable=True by default
optimizer = tf.train.GradientDescentOptimizer(learning_rate).minimize(cost)

# Initialize the variables (i.e. assign their default value)
init = tf.global_variables_initializer()

# Start training
with tf.Session() as sess:

    # Run the initializer
    sess.run(init)

    # Fit all training data
    for epoch in range(training_epochs):
        for (x, y) in zip(train_X, train_Y):
            sess.run(optimizer, feed_dict={X: x, Y: y})

        # Display logs per epoch step
        if (epoch+1) % display_step == 0:
            c = sess.run(cost, feed_dict={X: train_X, Y:train_Y})
            print("Epoch:", '%04d' % (epoch+1), "cost=", "{:.9f}".format(c), \\
                "W=", sess.run(W), "b=", sess.run(b))

    print("Optimization Finished!")
    training_cost = sess.run(cost, feed_dict={X: train_X, Y: train_Y})
    print("Training cost=", training_cost, "W=", sess.run(W), "b=", sess.run(b), '\\n')

    # Testing example, as requested (Issue #2)
    test_X = numpy.asarray([6.83, 4.668, 8.9, 7.91, 5.7, 8.7, 3.1, 2.1])
    test_Y = numpy.asarray([1.84, 2.273, 1.32, 2.202, 2.83, 3.829, 3.003, 2.544])

    print("Testing... (Mean square loss Comparison)")
    testing_cost = sess.run(
        tf.reduce_sum(tf.pow(pred - test_Y, 2)) / (2 * test_X.shape[0]),
        feed_dict={X: test_X, Y: test_Y})  # same function as cost above
    print("Testing cost=", testing_cost)
    print("Absolute mean square loss difference:", abs(
        training_cost - testing_cost))
'''


def test_tf1_linear_regression_runs_unchanged_and_matches_numpy(monkeypatch, capsys):
    out = _run(LINEAR_REGRESSION, monkeypatch, seed=3)
    assert "Optimization Finished!" in capsys.readouterr().out
    # the same training in float32 NumPy: TF1 makes the Variables of Python floats float32, and the
    # placeholder("float") feeds float32
    np.random.seed(3)
    w, b = np.float32(np.random.randn()), np.float32(np.random.randn())
    xs, ys = out["train_X"].astype(np.float32), out["train_Y"].astype(np.float32)
    n, lr = len(xs), np.float32(0.01)
    for _ in range(1000):
        for x, y in zip(xs, ys):
            r = x * w + b - y
            w, b = w - lr * (r * x / n), b - lr * (r / n)
    assert out["W"].dtype == np.float32 and out["b"].dtype == np.float32
    np.testing.assert_allclose([out["W"].value, out["b"].value], [w, b], rtol=1e-5)
    np.testing.assert_allclose(out["training_cost"], np.sum((xs * w + b - ys) ** 2) / (2 * n), rtol=1e-5)
    test_x, test_y = out["test_X"], out["test_Y"]
    np.testing.assert_allclose(out["testing_cost"], np.sum((test_x * w + b - test_y) ** 2) / (2 * len(test_x)),
                               rtol=1e-5)


class _Mnist:
    """MNIST's shape (784 pixels in [0, 1), 10 one-hot classes) over synthetic, learnable data; next_batch
    takes the training examples in order, as read_data_sets's DataSet does within an epoch."""

    class _Set:
        def __init__(self, images, labels):
            self.images, self.labels, self.num_examples, self._at = images, labels, len(images), 0

        def next_batch(self, batch_size):
            if self._at + batch_size > self.num_examples:
                self._at = 0
            start, self._at = self._at, self._at + batch_size
            return self.images[start:self._at], self.labels[start:self._at]

    def __init__(self, n_train=1100, n_test=500, seed=0):
        rng = np.random.default_rng(seed)
        # ten "digits": each a pattern of lit pixels, drawn with some pixels missing and some stray ones; mostly
        # zeros, as MNIST's pixels (so that gradient descent at the tutorials' rates is stable)
        n = n_train + n_test
        classes = rng.integers(0, 10, n)
        patterns = rng.random((10, 784)) < 0.1
        lit = (patterns[classes] & (rng.random((n, 784)) < 0.8)) | (rng.random((n, 784)) < 0.02)
        images = (lit * rng.uniform(0.5, 1.0, (n, 784))).astype(np.float32)
        labels = np.eye(10)[classes]  # one_hot=True: float64, as read_data_sets gives them
        self.train = self._Set(images[:n_train], labels[:n_train])
        self.test = self._Set(images[n_train:], labels[n_train:])


@pytest.fixture
def mnist(monkeypatch):
    """The stand-in of `from tensorflow.examples.tutorials.mnist import input_data`: only input_data exists
    under the name tensorflow (so a program that used the real `tf` would fail)."""
    data = _Mnist()
    names = ["tensorflow", "tensorflow.examples", "tensorflow.examples.tutorials",
             "tensorflow.examples.tutorials.mnist", "tensorflow.examples.tutorials.mnist.input_data"]
    modules = [types.ModuleType(name) for name in names]
    for parent, child in zip(modules, modules[1:]):
        setattr(parent, child.__name__.rpartition(".")[2], child)
    modules[-1].read_data_sets = lambda train_dir, one_hot=False, **kwargs: data
    for module in modules:
        monkeypatch.setitem(sys.modules, module.__name__, module)
    return data


LOGISTIC_REGRESSION = '''
from __future__ import print_function

import tensorflow as tf

# Import MNIST data
from tensorflow.examples.tutorials.mnist import input_data
mnist = input_data.read_data_sets("/tmp/data/", one_hot=True)

# Parameters
learning_rate = 0.01
training_epochs = 25
batch_size = 100
display_step = 1

# tf Graph Input
x = tf.placeholder(tf.float32, [None, 784]) # mnist data image of shape 28*28=784
y = tf.placeholder(tf.float32, [None, 10]) # 0-9 digits recognition => 10 classes

# Set model weights
W = tf.Variable(tf.zeros([784, 10]))
b = tf.Variable(tf.zeros([10]))

# Construct model
pred = tf.nn.softmax(tf.matmul(x, W) + b) # Softmax

# Minimize error using cross entropy
cost = tf.reduce_mean(-tf.reduce_sum(y*tf.log(pred), reduction_indices=1))
# Gradient Descent
optimizer = tf.train.GradientDescentOptimizer(learning_rate).minimize(cost)

# Initialize the variables (i.e. assign their default value)
init = tf.global_variables_initializer()

# Start training
with tf.Session() as sess:

    # Run the initializer
    sess.run(init)

    # Training cycle
    for epoch in range(training_epochs):
        avg_cost = 0.
        total_batch = int(mnist.train.num_examples/batch_size)
        # Loop over all batches
        for i in range(total_batch):
            batch_xs, batch_ys = mnist.train.next_batch(batch_size)
            # Run optimization op (backprop) and cost op (to get loss value)
            _, c = sess.run([optimizer, cost], feed_dict={x: batch_xs,
                                                          y: batch_ys})
            # Compute average loss
            avg_cost += c / total_batch
        # Display logs per epoch step
        if (epoch+1) % display_step == 0:
            print("Epoch:", '%04d' % (epoch+1), "cost=", "{:.9f}".format(avg_cost))

    print("Optimization Finished!")

    # Test model
    correct_prediction = tf.equal(tf.argmax(pred, 1), tf.argmax(y, 1))
    # Calculate accuracy
    accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
    print("Accuracy:", accuracy.eval({x: mnist.test.images[:3000], y: mnist.test.labels[:3000]}))
'''

MNIST_SOFTMAX = '''
import tensorflow as tf
from tensorflow.examples.tutorials.mnist import input_data

mnist = input_data.read_data_sets("/tmp/tensorflow/mnist/input_data", one_hot=True)

# Create the model
x = tf.placeholder(tf.float32, [None, 784])
W = tf.Variable(tf.zeros([784, 10]))
b = tf.Variable(tf.zeros([10]))
y = tf.matmul(x, W) + b

# Define loss and optimizer
y_ = tf.placeholder(tf.float32, [None, 10])

cross_entropy = tf.reduce_mean(
    tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=y))
train_step = tf.train.GradientDescentOptimizer(0.5).minimize(cross_entropy)

sess = tf.InteractiveSession()
tf.global_variables_initializer().run()
# Train
for _ in range(300):
  batch_xs, batch_ys = mnist.train.next_batch(100)
  sess.run(train_step, feed_dict={x: batch_xs, y_: batch_ys})

# Test trained model
correct_prediction = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
print(sess.run(accuracy, feed_dict={x: mnist.test.images,
                                    y_: mnist.test.labels}))
sess.close()
'''


def _softmax_regression(data, learning_rate, steps, batch_size=100):
    """The same training in NumPy (float64): softmax regression by gradient descent on the mean
    cross-entropy, whose gradient with respect to the logits is (softmax - labels) / batch."""
    w, b = np.zeros((784, 10)), np.zeros(10)
    images, labels = data.train.images.astype(np.float64), data.train.labels
    at, costs = 0, []
    for _ in range(steps):
        if at + batch_size > len(images):
            at = 0
        x, y = images[at:at + batch_size], labels[at:at + batch_size]
        at += batch_size
        z = x @ w + b
        p = np.exp(z - z.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        costs.append(np.mean(-np.sum(y * np.log(p), 1)))
        err = (p - y) / batch_size
        w, b = w - learning_rate * (x.T @ err), b - learning_rate * err.sum(0)
    accuracy = np.mean(np.argmax(data.test.images @ w + b, 1) == np.argmax(data.test.labels, 1))
    return w, b, costs, accuracy


def test_tf1_logistic_regression_runs_unchanged_and_matches_numpy(mnist, monkeypatch, capsys):
    out = _run(LOGISTIC_REGRESSION, monkeypatch)
    printed = capsys.readouterr().out
    w, b, costs, accuracy = _softmax_regression(mnist, 0.01, 25 * 11)
    np.testing.assert_allclose(out["W"].value, w, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(out["b"].value, b, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(out["avg_cost"], np.mean(costs[-11:]), rtol=1e-5)  # the last epoch's mean cost
    assert f"Accuracy: {str(np.float32(accuracy))}" in printed
    assert accuracy > 0.8  # it learned (10 classes: chance is 0.1)


def test_tf1_mnist_softmax_with_an_interactive_session_runs_unchanged_and_matches_numpy(mnist, monkeypatch,
                                                                                        capsys):
    out = _run(MNIST_SOFTMAX, monkeypatch)
    w, b, _, accuracy = _softmax_regression(mnist, 0.5, 300)
    np.testing.assert_allclose(out["W"].value, w, rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(out["b"].value, b, rtol=1e-3, atol=1e-5)
    assert capsys.readouterr().out.strip() == str(np.float32(accuracy))
    assert tf.get_default_session() is None  # closed: no longer the default
    assert accuracy > 0.8


# ---------------------------------------------------------------- the names, one by one


def test_import_forms():
    from dagrad import compat

    assert compat.v1 is tf and dg.compat.v1 is tf
    assert tf.Graph is dg.Graph and tf.get_default_graph is dg.get_default_graph
    assert tf.float32 == np.float32 and tf.float64 == np.float64 and tf.int32 == np.int32 and tf.bool == np.bool_


def test_tf1_converts_python_numbers_as_tf1_does():
    with dg.Graph():
        assert tf.constant(1.5).dtype == np.float32 and tf.constant([1, 2]).dtype == np.int32
        assert tf.constant(2 ** 40).dtype == np.int64  # too big for int32
        assert tf.constant(np.float64(1.5)).dtype == np.float64  # NumPy values keep their dtype
        assert tf.constant(np.zeros(2)).dtype == np.float64
        assert tf.constant(1, dtype=tf.float64).dtype == np.float64
        assert tf.constant(0.5, shape=[2, 3]).value.tolist() == [[0.5] * 3] * 2
        assert tf.constant([1, 2, 3, 4], shape=[2, 2]).value.tolist() == [[1, 2], [3, 4]]
        with pytest.raises(ValueError, match=r"constant: a value of shape \(3,\) does not fit shape \(2, 2\)"):
            tf.constant([1, 2, 3], shape=[2, 2])
        assert tf.Variable(0.5).dtype == np.float32 and tf.Variable(np.zeros(2)).dtype == np.float64
        assert tf.zeros([2]).dtype == tf.ones([2]).dtype == np.float32
        assert tf.zeros([2], dtype="float64").dtype == np.float64


def test_variables_are_named_as_tf1_names_them_and_take_nodes_as_initial_values():
    with dg.Graph():
        a, b = tf.Variable(1.0), tf.Variable(2.0)
        assert (a.name, b.name) == ("Variable", "Variable_1")
        c = tf.Variable(tf.ones([2, 2]) * 3.0, name="c")
        assert c.name == "c" and c.value.tolist() == [[3.0, 3.0], [3.0, 3.0]]
        x = tf.placeholder(tf.float32, [2])
        with pytest.raises(ValueError, match="Variable: the initial value depends on placeholder"):
            tf.Variable(x * 2.0)
        with pytest.raises(TypeError, match=r"Variable: collections= is not supported"):
            tf.Variable(1.0, collections=["x"])


def test_reductions_take_tf1s_argument_names():
    x = np.arange(6.0).reshape(2, 3)
    with dg.Graph() as g:
        p = tf.placeholder(tf.float64, [None, 3])
        nodes = [tf.reduce_sum(p, reduction_indices=1), tf.reduce_sum(p, axis=[0, 1]), tf.reduce_mean(p, 0),
                 tf.reduce_max(p, axis=1, keep_dims=True), tf.reduce_min(p, 1, keepdims=True), tf.reduce_prod(p, 1),
                 tf.reduce_logsumexp(p, 1), tf.reduce_any(p > 4, 1), tf.reduce_all(p >= 0)]
        with pytest.raises(ValueError, match="got both axis and reduction_indices"):
            tf.reduce_sum(p, axis=0, reduction_indices=1)
    got = dg.Session(g).run(nodes, {p: x})
    expected = [x.sum(1), x.sum(), x.mean(0), x.max(1, keepdims=True), x.min(1, keepdims=True), x.prod(1),
                np.log(np.exp(x).sum(1)), (x > 4).any(1), (x >= 0).all()]
    for a, e in zip(got, expected):
        np.testing.assert_allclose(a, e)
    with dg.Graph() as g:  # TF1's mean of integers is an integer
        mean = tf.reduce_mean(tf.constant([1, 2]))
    assert mean.dtype == np.int32 and dg.Session(g).run(mean) == 1


def test_argmax_cast_equal_and_accuracy():
    with dg.Graph() as g:
        p = tf.placeholder(tf.float32, [None, 3])
        labels = tf.placeholder(tf.int64, [None])
        first_axis = tf.argmax(p)  # TF1's default axis is 0
        correct = tf.equal(tf.argmax(p, 1), labels)
        accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
        as_int32 = tf.argmax(p, dimension=1, output_type=tf.int32)
    x = np.array([[0.1, 0.9, 0.0], [0.8, 0.1, 0.1], [0.2, 0.3, 0.5], [0.0, 0.0, 1.0]], np.float32)
    got = dg.Session(g).run([first_axis, accuracy, as_int32], {p: x, labels: [1, 0, 0, 2]})
    np.testing.assert_array_equal(got[0], x.argmax(0))
    assert got[1] == np.float32(0.75) and got[1].dtype == np.float32
    assert got[2].dtype == np.int32


def test_matmul_transposes_and_shapes():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(4, 3)
    with dg.Graph() as g:
        nodes = [tf.matmul(a, tf.constant(b), transpose_b=True), tf.matmul(tf.constant(b), b, transpose_a=True),
                 tf.reshape(tf.constant(a), [-1]), tf.transpose(tf.constant(a), perm=[1, 0]),
                 tf.concat([tf.constant(a), tf.constant(a)], 0), tf.stack([tf.constant(a)] * 2, axis=1),
                 tf.expand_dims(tf.constant(a), 0), tf.squeeze(tf.constant(a[None]), squeeze_dims=[0]),
                 tf.gather(tf.constant(b), [3, 0]), tf.one_hot([0, 2, 5], 3), tf.add_n([tf.constant(a)] * 3),
                 tf.clip_by_value(tf.constant(a), 1.0, 4.0), tf.tile(tf.constant(a), [1, 2])]
    got = dg.Session(g).run(nodes)
    expected = [a @ b.T, b.T @ b, a.ravel(), a.T, np.concatenate([a, a]), np.stack([a, a], 1), a[None], a,
                b[[3, 0]], np.array([[1, 0, 0], [0, 0, 1], [0, 0, 0]], np.float32), 3 * a, np.clip(a, 1, 4),
                np.tile(a, (1, 2))]
    for x, e in zip(got, expected):
        np.testing.assert_array_equal(x, e)
    assert got[9].dtype == np.float32


def test_tf_nn_functions_match_numpy():
    z = np.array([[2.0, 1.0, 0.1], [0.5, -1.0, 3.0]])
    onehot = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    with dg.Graph() as g:
        logits = tf.placeholder(tf.float64, [None, 3])
        nodes = [tf.nn.softmax(logits), tf.nn.log_softmax(logits, axis=0), tf.nn.relu(logits), tf.nn.sigmoid(logits),
                 tf.nn.tanh(logits), tf.nn.l2_loss(logits),
                 tf.nn.softmax_cross_entropy_with_logits(labels=onehot, logits=logits),
                 tf.nn.softmax_cross_entropy_with_logits_v2(onehot, logits),
                 tf.nn.sparse_softmax_cross_entropy_with_logits(labels=np.array([0, 2]), logits=logits),
                 tf.nn.sigmoid_cross_entropy_with_logits(labels=onehot, logits=logits)]
    got = dg.Session(g).run(nodes, {logits: z})
    softmax = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    xent = -np.sum(onehot * np.log(softmax), 1)
    sig = 1 / (1 + np.exp(-z))
    expected = [softmax, z - np.log(np.exp(z).sum(0)), np.maximum(z, 0), sig, np.tanh(z), np.sum(z ** 2) / 2, xent,
                xent, xent, -(onehot * np.log(sig) + (1 - onehot) * np.log(1 - sig))]
    for x, e in zip(got, expected):
        np.testing.assert_allclose(x, e, rtol=1e-12)
    with pytest.raises(TypeError, match="call it with named arguments"):
        tf.nn.softmax_cross_entropy_with_logits(onehot, z)


def test_the_v1_cross_entropy_stops_the_gradient_into_the_labels_and_v2_does_not():
    z, target = np.array([[2.0, 1.0, 0.1]]), np.array([[0.2, 0.3, 0.5]])
    with dg.Graph() as g:
        logits, labels = tf.placeholder(tf.float64, [1, 3]), tf.placeholder(tf.float64, [1, 3])
        v1 = tf.gradients(tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits), [labels])
        v2 = tf.gradients(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits), labels)
    got_v1, got_v2 = dg.Session(g).run([v1, v2], {logits: z, labels: target})
    assert isinstance(v2, list) and len(v2) == 1  # tf.gradients returns a list, even for one x
    np.testing.assert_array_equal(got_v1[0], np.zeros((1, 3)))
    np.testing.assert_allclose(got_v2[0], -(z - np.log(np.exp(z).sum())))


def test_eval_and_run_use_the_default_session_or_the_one_given():
    with dg.Graph():
        x = tf.placeholder(tf.float32, [None])
        w = tf.Variable(1.0)
        y = x * w
        step = tf.assign_add(w, 1.0)
        with pytest.raises(ValueError, match="No default session is registered"):
            y.eval({x: [1.0]})
        with tf.Session() as sess:
            assert tf.get_default_session() is sess
            np.testing.assert_array_equal(y.eval(feed_dict={x: [1.0, 2.0]}), [1.0, 2.0])
            assert step.run() is None and w.value == 2.0
        assert tf.get_default_session() is None
        other = tf.Session()
        np.testing.assert_array_equal(y.eval({x: [1.0]}, session=other), [2.0])
        with other.as_default():
            assert tf.get_default_session() is other
        assert not other._closed  # as_default does not close it
        other.close()
    with dg.Graph(), tf.Session() as sess:
        with pytest.raises(ValueError, match="belongs to another graph than the session's"):
            y.eval({x: [1.0]}, session=sess)


def test_tf_optimizers_compute_tf1s_update_formulas():
    g0, lr = np.array([0.5, -1.5, 2.0]), 0.1

    def grad(w):  # of sum(w ** 2 * g0), elementwise: 2 * w * g0
        return 2 * w * g0

    def momentum(w, state, nesterov=False):
        accum = state.get("a", 0) * 0.9 + grad(w)
        state["a"] = accum
        return w - (grad(w) * lr + accum * 0.9 * lr if nesterov else accum * lr)

    def adam(w, state):
        t = state["t"] = state.get("t", 0) + 1
        g = grad(w)
        alpha = lr * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
        m = state["m"] = state.get("m", 0) + (g - state.get("m", 0)) * (1 - 0.9)
        v = state["v"] = state.get("v", 0) + (g * g - state.get("v", 0)) * (1 - 0.999)
        return w - m * alpha / (np.sqrt(v) + 1e-8)

    def rmsprop(w, state, centered=False):
        g = grad(w)
        ms = state["ms"] = state.get("ms", 1.0) + (g * g - state.get("ms", 1.0)) * (1 - 0.9)  # starts at ones
        denom = ms
        if centered:
            mg = state["mg"] = state.get("mg", 0) + (g - state.get("mg", 0)) * (1 - 0.9)
            denom = ms - mg * mg
        mom = state["mom"] = state.get("mom", 0) * 0.5 + lr * g / np.sqrt(denom + 1e-10)
        return w - mom

    def adagrad(w, state):
        g = grad(w)
        accum = state["acc"] = state.get("acc", 0.1) + g * g
        return w - lr * g / np.sqrt(accum)

    cases = [(tf.train.GradientDescentOptimizer(lr), lambda w, s: w - lr * grad(w)),
             (tf.train.MomentumOptimizer(lr, 0.9), momentum),
             (tf.train.MomentumOptimizer(lr, 0.9, use_nesterov=True), lambda w, s: momentum(w, s, True)),
             (tf.train.AdamOptimizer(lr), adam),
             (tf.train.RMSPropOptimizer(lr, momentum=0.5), rmsprop),
             (tf.train.RMSPropOptimizer(lr, momentum=0.5, centered=True), lambda w, s: rmsprop(w, s, True)),
             (tf.train.AdagradOptimizer(lr), adagrad)]
    for optimizer, reference in cases:
        with dg.Graph() as g:
            w = tf.Variable(np.array([1.0, 2.0, -1.0]))
            train = optimizer.minimize(tf.reduce_sum(w ** 2 * g0))
            init = tf.global_variables_initializer()
        expect, state = w.value.copy(), {}
        with tf.Session(graph=g) as sess:
            sess.run(init)
            for _ in range(5):
                sess.run(train)
                expect = reference(expect, state)
        np.testing.assert_allclose(w.value, expect, rtol=1e-12, err_msg=type(optimizer).__name__)


def test_compute_and_apply_gradients_with_a_global_step():
    with dg.Graph() as g:
        w = tf.Variable(np.array([3.0, -4.0]), name="w")
        global_step = tf.Variable(0, name="global_step", trainable=False)
        opt = tf.train.GradientDescentOptimizer(0.1)
        pairs = opt.compute_gradients(tf.reduce_sum(w * w))
        assert [v for _, v in pairs] == [w]
        capped = [(tf.clip_by_value(grad, -1.0, 1.0), v) for grad, v in pairs]
        train = opt.apply_gradients(capped, global_step=global_step)
        with pytest.raises(TypeError, match="the second item of each pair must be a dg.Variable"):
            opt.apply_gradients([(pairs[0][0], 1.0)])
        with pytest.raises(ValueError, match="no gradients provided for any Variable"):
            opt.apply_gradients([(None, w)])
    with tf.Session(graph=g) as sess:
        for _ in range(3):
            sess.run(train)
    np.testing.assert_allclose(w.value, [2.7, -3.7])
    assert global_step.value == 3


def test_random_ops_draw_at_each_run_and_follow_the_seeds():
    def draws(seed=None, op_seed=None):
        with dg.Graph() as g:
            if seed is not None:
                tf.set_random_seed(seed)
            a = tf.random_normal([3], seed=op_seed)
            b = tf.random_uniform([2, 2], minval=-1.0, maxval=1.0)
            c = tf.truncated_normal([1000], stddev=2.0)
            d = tf.random_uniform([4], maxval=10, dtype=tf.int32)
            e = tf.random.normal([2])
        with tf.Session(graph=g) as sess:
            return sess.run([a, b, c, d, e]), sess.run(a)

    (first, again), (second, _) = draws(seed=1), draws(seed=1)
    for x, y in zip(first, second):  # the same graph seed: the same values in each program run
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(first[0], again)  # a new draw at each run
    assert first[0].dtype == np.float32 and first[3].dtype == np.int32
    assert np.all(np.abs(first[2]) <= 4.0) and first[2].std() > 1.5  # truncated at two standard deviations
    assert np.all((first[1] >= -1) & (first[1] < 1)) and np.all((first[3] >= 0) & (first[3] < 10))
    assert not np.array_equal(draws(seed=2)[0][0], first[0][0])
    np.testing.assert_array_equal(draws(op_seed=5)[0][0], draws(op_seed=5)[0][0])  # an op seed alone fixes it too
    with dg.Graph():  # as an initial value: drawn once
        w = tf.Variable(tf.random_normal([784, 10], stddev=0.01))
    assert w.shape == (784, 10) and 0.005 < w.value.std() < 0.015


def test_saver_saves_and_restores_by_name(tmp_path):
    with dg.Graph():
        w = tf.Variable(np.array([1.0, 2.0]), name="w")
        b = tf.Variable(3.0, name="b")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            path = saver.save(sess, str(tmp_path / "model"), global_step=7)
            assert path.endswith("model-7")
            w.value, b.value = [0.0, 0.0], 0.0
            saver.restore(sess, path)
    np.testing.assert_array_equal(w.value, [1.0, 2.0])
    assert b.value == np.float32(3.0)
    with dg.Graph(), tf.Session() as sess:
        tf.Variable(1.0, name="other")
        with pytest.raises(ValueError, match=r"holds no value for Variable\(s\) \['other'\]"):
            tf.train.Saver().restore(sess, path)


@pytest.mark.parametrize("module, name, parts", [
    (tf, "get_variable", ["TensorFlow 1's tf.get_variable", "tf.Variable(initial_value", "docs/coming-from.md"]),
    (tf, "control_dependencies", ["tf.control_dependencies", "every update of one Session.run"]),
    (tf, "no_such_thing", ["if it is TensorFlow 1's tf.no_such_thing", "docs/coming-from.md, 'TensorFlow 1'"]),
    (tf.nn, "conv2d", ["TensorFlow 1's tf.nn.conv2d", "NHWC"]),
    (tf.train, "exponential_decay", ["TensorFlow 1's tf.train.exponential_decay", "param_groups"]),
    (tf.random, "gamma", ["TensorFlow's tf.random.gamma", "docs/coming-from.md"]),
])
def test_a_tf1_name_that_dagrad_lacks_says_what_to_use(module, name, parts):
    with pytest.raises(AttributeError) as info:
        getattr(module, name)
    for part in parts:
        assert part in str(info.value)
    assert not hasattr(module, "__wrapped__")  # Python's probes still get a plain AttributeError


def test_tf1_reaches_the_default_graph_and_graph_as_default():
    g = tf.Graph()
    with g.as_default():
        assert tf.get_default_graph() is g
        x = tf.placeholder(tf.float32, shape=[None], name="x")
    assert x.graph is g and x.name == "x"
    tf.disable_v2_behavior()  # tensorflow.compat.v1's call: nothing to do


def test_dropout_takes_a_placeholder_keep_prob_as_tf1_programs_feed_it():
    with dg.Graph() as g:
        x = tf.placeholder(tf.float32, [None, 2000])
        keep_prob = tf.placeholder(tf.float32)
        y = tf.nn.dropout(x, keep_prob)
        (dx,) = tf.gradients(tf.reduce_sum(y), [x])
        fixed = tf.nn.dropout(x, rate=0.25)
        with pytest.raises(ValueError, match=r"keep_prob must be in \(0, 1\], got 1.5"):
            tf.nn.dropout(x, 1.5)
    ones = np.ones((3, 2000), np.float32)
    with tf.Session(graph=g) as sess:
        train, grad = sess.run([y, dx], {x: ones, keep_prob: 0.5})
        again = sess.run(y, {x: ones, keep_prob: 0.5})
        evaluate = sess.run(y, {x: ones, keep_prob: 1.0})
        quarter = sess.run(fixed, {x: ones})
    assert set(np.unique(train)) == {0.0, 2.0} and abs(train.mean() - 1) < 0.05 and train.dtype == np.float32
    np.testing.assert_array_equal(grad, train)  # the gradient is the mask / keep_prob
    assert not np.array_equal(train, again)  # a new mask at each run
    np.testing.assert_array_equal(evaluate, ones)
    assert abs((quarter == 0).mean() - 0.25) < 0.03
