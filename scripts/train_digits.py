"""Train the digits CNN in numpy, quantize it to int8 and write ``sw/models/digits.npz``.

    .venv/bin/python scripts/train_digits.py            # needs scikit-learn (its bundled digits)

The network (NHWC): 8×8×1 image → conv 3×3, 8 filters, padding 1 → ReLU → conv 3×3, 16
filters, stride 2, padding 1 → ReLU → dense 256 → 10. Trained in float64 with Adam on a fixed
80/20 split of ``sklearn.datasets.load_digits`` (seed 0), then quantized (docs in
:mod:`zatile.sw.models.digits`): the input exactly (pixel × 7: the pixels are the integers
0..16), weights symmetric per output channel (per tensor for the dense layer, so its int32
logits keep their argmax), biases to int32 at the product's scale, activations per tensor
from their largest value on the training set. The file also keeps the held-out images and
labels, so the model runs without scikit-learn; tests check they are the dataset's.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits

from zatile.sw.models.digits import INPUT_SCALE, MODEL_FILE, split
from zatile.sw.ops import im2col


def _col2im(columns: np.ndarray, shape, kernel: int, stride: int, padding: int) -> np.ndarray:
    """The adjoint of im2col: add each patch's gradient back to the input it came from."""
    batch, height, width, channels = shape
    out_h, out_w = columns.shape[1:3]
    grad = np.zeros((batch, height + 2 * padding, width + 2 * padding, channels))
    patches = columns.reshape(batch, out_h, out_w, kernel, kernel, channels)
    for row in range(kernel):
        for column in range(kernel):
            grad[:, row:row + stride * (out_h - 1) + 1:stride,
                 column:column + stride * (out_w - 1) + 1:stride] += patches[:, :, :, row, column]
    return grad[:, padding:padding + height, padding:padding + width]


class _Network:
    LAYERS = {"w1": (8, 3, 3, 1), "b1": (8,), "w2": (16, 3, 3, 8), "b2": (16,),
              "wd": (10, 256), "bd": (10,)}

    def __init__(self, rng: np.random.Generator):
        self.params = {name: (rng.standard_normal(shape) * np.sqrt(2 / np.prod(shape[1:]))
                              if name[0] == "w" else np.zeros(shape))
                       for name, shape in self.LAYERS.items()}

    def forward(self, x: np.ndarray):
        p = self.params
        patches1 = im2col(x, (3, 3), 1, 1)
        a1 = np.maximum(patches1 @ p["w1"].reshape(8, -1).T + p["b1"], 0)
        patches2 = im2col(a1, (3, 3), 2, 1)
        a2 = np.maximum(patches2 @ p["w2"].reshape(16, -1).T + p["b2"], 0)
        logits = a2.reshape(len(x), -1) @ p["wd"].T + p["bd"]
        return logits, (patches1, a1, patches2, a2)

    def gradients(self, x: np.ndarray, labels: np.ndarray) -> dict:
        p = self.params
        logits, (patches1, a1, patches2, a2) = self.forward(x)
        probabilities = np.exp(logits - logits.max(1, keepdims=True))
        probabilities /= probabilities.sum(1, keepdims=True)
        d_logits = probabilities
        d_logits[np.arange(len(x)), labels] -= 1
        d_logits /= len(x)
        flat = a2.reshape(len(x), -1)
        d_a2 = (d_logits @ p["wd"]).reshape(a2.shape) * (a2 > 0)
        d_y2 = d_a2.reshape(-1, 16)
        d_a1 = _col2im((d_y2 @ p["w2"].reshape(16, -1)).reshape(*a2.shape[:3], -1), a1.shape,
                       3, 2, 1) * (a1 > 0)
        d_y1 = d_a1.reshape(-1, 8)
        return {"wd": d_logits.T @ flat, "bd": d_logits.sum(0),
                "w2": (d_y2.T @ patches2.reshape(-1, 72)).reshape(16, 3, 3, 8),
                "b2": d_y2.sum(0),
                "w1": (d_y1.T @ patches1.reshape(-1, 9)).reshape(8, 3, 3, 1), "b1": d_y1.sum(0)}


def train(images: np.ndarray, labels: np.ndarray, epochs: int, seed: int) -> dict:
    """Adam (learning rate 0.01, batches of 64) on float64 images scaled to [0, 1]."""
    rng = np.random.default_rng(seed)
    network = _Network(rng)
    moments = {name: [np.zeros_like(value), np.zeros_like(value)]
               for name, value in network.params.items()}
    step = 0
    x = images[..., None] / 16.0
    for _ in range(epochs):
        order = rng.permutation(len(x))
        for start in range(0, len(x), 64):
            batch = order[start:start + 64]
            step += 1
            for name, grad in network.gradients(x[batch], labels[batch]).items():
                first, second = moments[name]
                first[...] = 0.9 * first + 0.1 * grad
                second[...] = 0.999 * second + 0.001 * grad ** 2
                network.params[name] -= 0.01 * (first / (1 - 0.9 ** step)) / (
                    np.sqrt(second / (1 - 0.999 ** step)) + 1e-8)
    return network.params


def quantize(params: dict, train_images: np.ndarray) -> dict:
    """int8 weights, int32 biases and float32 requantization scales (see the module doc)."""
    network = _Network(np.random.default_rng(0))
    network.params = params
    _, (_, a1, _, a2) = network.forward(train_images[..., None] / 16.0)
    # The float network sees pixel / 16; the int8 one pixel × 7, so its input scale is 1/7 of a
    # pixel, i.e. 16/7 of the float network's unit.
    input_scale = 1 / (INPUT_SCALE * 16.0)
    a1_scale, a2_scale = a1.max() / 127, a2.max() / 127
    model = {}
    for layer, weight, bias, in_scale, out_scale in (
            ("1", "w1", "b1", input_scale, a1_scale), ("2", "w2", "b2", a1_scale, a2_scale)):
        w = params[weight]
        w_scale = np.abs(w.reshape(len(w), -1)).max(1) / 127
        model[f"conv{layer}_weight"] = np.round(w / w_scale[:, None, None, None]).astype(np.int8)
        model[f"conv{layer}_bias"] = np.round(params[bias] / (in_scale * w_scale)).astype(np.int32)
        model[f"conv{layer}_scale"] = (in_scale * w_scale / out_scale).astype(np.float32)
    dense_scale = np.abs(params["wd"]).max() / 127
    model["dense_weight"] = np.round(params["wd"] / dense_scale).astype(np.int8)
    model["dense_bias"] = np.round(params["bd"] / (a2_scale * dense_scale)).astype(np.int32)
    return model


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--output", type=Path, default=MODEL_FILE)
    args = parser.parse_args()
    digits = load_digits()
    (train_images, train_labels), (test_images, test_labels) = split(
        digits.images.astype(np.uint8), digits.target.astype(np.uint8))
    params = train(train_images, train_labels, args.epochs, seed=0)
    network = _Network(np.random.default_rng(0))
    network.params = params
    logits, _ = network.forward(test_images[..., None] / 16.0)
    model = quantize(params, train_images)
    np.savez_compressed(args.output, **model, test_images=test_images, test_labels=test_labels,
                        float_accuracy=np.float64((logits.argmax(1) == test_labels).mean()))
    print(f"float accuracy on the {len(test_labels)} held-out digits: "
          f"{(logits.argmax(1) == test_labels).mean():.4f}; wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
