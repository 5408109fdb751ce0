"""A small quantized CNN for the handwritten digits scikit-learn ships, run on the engine.

The network (NHWC, int8): the 8×8 image (pixels 0..16) times :data:`INPUT_SCALE` → conv 3×3,
8 filters, padding 1 → ReLU → conv 3×3, 16 filters, stride 2, padding 1 → ReLU → dense 256 → 10
int32 logits, whose argmax is the prediction. Each convolution is one :func:`zatile.sw.ops.conv2d`
call with the bias, the requantization to int8 (a float32 scale per output channel, ties to
even, zero point 0) and the ReLU fused in its GEMM's epilogue; the dense layer is
:func:`zatile.sw.ops.dense` with an int32 bias (per-tensor weight scale, so the logits' argmax
is the float network's). ``scripts/train_digits.py`` trains it in numpy and writes
:data:`MODEL_FILE` with the held-out images and labels.

:func:`predict_reference` computes the same integers in numpy without the engine (a direct
convolution and :func:`zatile.sw.ops.requantize_reference`).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

from zatile.sw.ops import conv2d, conv2d_reference, dense, requantize_reference

__all__ = ["MODEL_FILE", "INPUT_SCALE", "split", "load", "predict", "predict_reference",
           "run_demo"]

#: The trained, quantized model and the held-out set (package data).
MODEL_FILE = Path(__file__).with_name("digits.npz")
#: The int8 input is the pixel (0..16) times this: exact, and at most 112.
INPUT_SCALE = 7
#: The layers' convolution parameters: (stride, padding).
_CONVOLUTIONS = (("conv1", 1, 1), ("conv2", 2, 1))


def split(images: np.ndarray, labels: np.ndarray):
    """The fixed 80/20 split of the digits: ((train images, labels), (test images, labels))."""
    order = np.random.default_rng(0).permutation(len(images))
    cut = len(images) * 4 // 5
    return ((images[order[:cut]], labels[order[:cut]]),
            (images[order[cut:]], labels[order[cut:]]))


@cache
def load() -> dict:
    """The model's arrays (weights, biases, scales) and ``test_images``/``test_labels``."""
    with np.load(MODEL_FILE) as data:
        return {name: data[name] for name in data.files}


def _inputs(images: np.ndarray) -> np.ndarray:
    images = np.asarray(images)
    if images.ndim != 3 or images.shape[1:] != (8, 8) or images.size == 0:
        raise ValueError(f"images must be (N, 8, 8) with N >= 1, not of shape {images.shape}")
    if images.min() < 0 or images.max() > 16:
        raise ValueError(f"pixels must lie in 0..16, not {images.min()}..{images.max()}")
    return (images.astype(np.int16) * INPUT_SCALE).astype(np.int8)[..., None]


def predict(images: np.ndarray, *, backend: str = "model", svl: int = 512,
            stats: dict | None = None) -> np.ndarray:
    """The predicted digit of each (8, 8) image, every layer on the engine."""
    model, x = load(), _inputs(images)
    for layer, stride, padding in _CONVOLUTIONS:
        x = conv2d(x, model[f"{layer}_weight"], model[f"{layer}_bias"], stride, padding,
                   activation="relu", scale=model[f"{layer}_scale"], backend=backend, svl=svl,
                   stats=stats)
    logits = dense(x.reshape(len(x), -1), model["dense_weight"], model["dense_bias"],
                   backend=backend, svl=svl, stats=stats)
    return logits.argmax(1)


def predict_reference(images: np.ndarray) -> np.ndarray:
    """:func:`predict` in numpy integers, without the engine."""
    model, x = load(), _inputs(images)
    for layer, stride, padding in _CONVOLUTIONS:
        accumulators = conv2d_reference(x, model[f"{layer}_weight"], stride, padding)
        x = requantize_reference(accumulators.astype(np.int32), model[f"{layer}_bias"],
                                 model[f"{layer}_scale"], 0, (0, 127))
    logits = x.reshape(len(x), -1).astype(np.int64) @ model["dense_weight"].astype(np.int64).T
    return (logits + model["dense_bias"]).astype(np.int32).argmax(1)


def run_demo(backend: str = "model", svl: int = 128, limit: int | None = None,
             batch: int = 20) -> int:
    """Classify the held-out digits on ``backend`` in batches (with a progress bar), print the
    accuracy and the comparison with :func:`predict_reference`; an exit status."""
    from tqdm import tqdm  # local: only the demo draws a bar

    model = load()
    images, labels = model["test_images"][:limit], model["test_labels"][:limit]
    stats: dict = {}
    predictions = np.concatenate([
        predict(images[start:start + batch], backend=backend, svl=svl, stats=stats)
        for start in tqdm(range(0, len(images), batch), desc=f"digits on the {backend}",
                          unit="batch", leave=False)])
    expected = predict_reference(images)
    print(f"zatile demo --model digits: {len(images)} held-out digits on the {backend} at SVL "
          f"{svl}, {stats['engine_instructions']:,} engine instructions")
    print(f"accuracy {np.mean(predictions == labels):.4f} (the float network: "
          f"{float(model['float_accuracy']):.4f})")
    if not np.array_equal(predictions, expected):
        wrong = np.flatnonzero(predictions != expected)
        print(f"MISMATCH against the numpy int8 reference: {len(wrong)} predictions differ, "
              f"first at image {wrong[0]}")
        return 1
    print("predictions identical to the numpy int8 reference")
    return 0
