"""The digits CNN end to end (sw/models/digits.py): conv2d → ReLU → conv2d → ReLU → dense, int8.

* The shipped held-out set is exactly the fixed split of scikit-learn's bundled digits.
* The numpy int8 reference classifies at least 97% of the held-out digits correctly (the float
  network it was quantized from: 98.9%).
* On the model (SVL 512 and 128) and on the RTL (SVL 128 and 256, a few digits; every held-out
  digit under soak) the predictions are identical to the reference; a planted change to one
  bias is seen as a mismatch.
* ``zatile demo --model digits`` prints the accuracy and the check.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from sklearn.datasets import load_digits

from tests.test_real_programs import _need_zig
from zatile.sw.cli import main
from zatile.sw.models import digits


def test_shipped_held_out_set_is_the_datasets_split():
    data = load_digits()
    (train_images, _), (test_images, test_labels) = digits.split(
        data.images.astype(np.uint8), data.target.astype(np.uint8))
    model = digits.load()
    assert len(train_images) == 1437 and len(test_images) == 360
    assert np.array_equal(model["test_images"], test_images)
    assert np.array_equal(model["test_labels"], test_labels)


def test_int8_reference_classifies_the_held_out_digits():
    model = digits.load()
    accuracy = np.mean(digits.predict_reference(model["test_images"]) == model["test_labels"])
    assert accuracy >= 0.97 and float(model["float_accuracy"]) >= 0.97
    shapes = {name: model[name].shape for name in model if not name.startswith(("test", "float"))}
    assert shapes == {"conv1_weight": (8, 3, 3, 1), "conv1_bias": (8,), "conv1_scale": (8,),
                      "conv2_weight": (16, 3, 3, 8), "conv2_bias": (16,), "conv2_scale": (16,),
                      "dense_weight": (10, 256), "dense_bias": (10,)}


@pytest.mark.parametrize("svl, count", [(512, 360), (128, 40)])
def test_predictions_on_the_model_are_the_reference(svl, count):
    _need_zig()
    images = digits.load()["test_images"][:count]
    stats: dict = {}
    assert np.array_equal(digits.predict(images, svl=svl, stats=stats),
                          digits.predict_reference(images))
    assert stats["engine_instructions"] > 0


@pytest.mark.parametrize("svl, count", [(128, 6), (256, 4)])
def test_predictions_on_the_rtl_are_the_reference(svl, count):
    _need_zig()
    images = digits.load()["test_images"][-count:]
    assert np.array_equal(digits.predict(images, backend="rtl", svl=svl),
                          digits.predict_reference(images))


@pytest.mark.soak
@pytest.mark.parametrize("svl", [128, 256])
def test_every_held_out_digit_on_the_rtl(svl):
    _need_zig()
    images = digits.load()["test_images"]
    assert np.array_equal(digits.predict(images, backend="rtl", svl=svl),
                          digits.predict_reference(images))


def test_a_planted_bias_change_is_a_mismatch(monkeypatch, capsys):
    """The engine runs a model whose dense bias makes every digit a 3; the demo's check against
    the reference of the shipped model reports the first image that differs."""
    _need_zig()
    shipped = digits.load()
    expected = digits.predict_reference(shipped["test_images"][:10])
    planted = dict(shipped, dense_bias=shipped["dense_bias"] + np.eye(10, dtype=np.int32)[3]
                   * 10 ** 6)
    monkeypatch.setattr(digits, "load", lambda: planted)
    monkeypatch.setattr(digits, "predict_reference", lambda images: expected)
    assert main(["demo", "--model", "digits", "--limit", "10", "--svl", "512"]) == 1
    first = int(np.flatnonzero(expected != 3)[0])
    assert f"predictions differ, first at image {first}" in capsys.readouterr().out


def test_demo_prints_the_accuracy_and_the_check(capsys):
    _need_zig()
    assert main(["demo", "--model", "digits", "--limit", "30", "--svl", "256"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("zatile demo --model digits: 30 held-out digits on the model at "
                               "SVL 256")
    assert re.fullmatch(r"accuracy (0\.9\d|1\.00)\d\d \(the float network: 0\.9889\)", lines[1])
    assert lines[2] == (
        "predictions identical to the numpy int8 reference")


@pytest.mark.parametrize("arguments, message", [
    (["demo", "--svl", "256"], "--svl and --limit belong to 'zatile demo --model digits'"),
    (["demo", "--model", "digits", "--limit", "0"], "--limit"),
    (["demo", "--model", "cifar"], "invalid choice: 'cifar'"),
])
def test_demo_rejects_bad_arguments(arguments, message, capsys):
    try:
        status = main(arguments)
    except SystemExit as exit_:                    # argparse's own errors
        status = exit_.code
    error = capsys.readouterr().err
    assert status == 2 and error.startswith("zatile: error:") and message in error


@pytest.mark.parametrize("images, message", [
    (np.zeros((2, 8, 7)), r"images must be \(N, 8, 8\) with N >= 1, not of shape \(2, 8, 7\)"),
    (np.full((1, 8, 8), 17), "pixels must lie in 0..16, not 17..17"),
])
def test_bad_images_are_rejected(images, message):
    with pytest.raises(ValueError, match=message):
        digits.predict_reference(images)
