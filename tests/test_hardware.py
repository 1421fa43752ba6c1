"""graders.hardware: each device figure pinned to its vendor's datasheet, as the datasheet prints it."""
import re

import pytest

from graders import hardware

# (device, what the datasheet prints, in its own words and units). A sparse peak is printed by
# NVIDIA with an asterisk ("* With sparsity"); for A100 and MI300X the dense figure is printed.
PRINTED = [
    (hardware.V100, "memory", "32 GB"), (hardware.V100, "bandwidth", "900 GB/s"),
    (hardware.V100, "bf16", "125 TFLOPS"),
    (hardware.A100, "memory", "80 GB"), (hardware.A100, "bandwidth", "2,039 GB/s"),
    (hardware.A100, "bf16", "312 TFLOPS"),
    (hardware.H100, "memory", "80 GB"), (hardware.H100, "bandwidth", "3.35 TB/s"),
    (hardware.H100, "bf16", "1,979 TFLOPS*"), (hardware.H100, "fp8", "3,958 TFLOPS*"),
    (hardware.H200, "memory", "141 GB"), (hardware.H200, "bandwidth", "4.8 TB/s"),
    (hardware.H200, "bf16", "1,979 TFLOPS*"), (hardware.H200, "fp8", "3,958 TFLOPS*"),
    # DGX B200 prints the whole 8-GPU system; one GPU is an eighth of it
    (hardware.B200, "memory", "1,440 GB / 8"), (hardware.B200, "bandwidth", "64 TB/s / 8"),
    (hardware.B200, "bf16", "36 PFLOPS* / 8"), (hardware.B200, "fp8", "72 PFLOPS* / 8"),
    (hardware.MI300X, "memory", "192 GB"), (hardware.MI300X, "bandwidth", "5.3 TB/s"),
    (hardware.MI300X, "bf16", "1307.4 TFLOPS"), (hardware.MI300X, "fp8", "2614.9 TFLOPS"),
]
UNITS = {"GB": 1e9, "TB/s": 1e12, "GB/s": 1e9, "TFLOPS": 1e12, "PFLOPS": 1e15}


def read_printed(text):
    """(value in plain units, printed with sparsity) from a datasheet string like '1,979 TFLOPS* / 8'."""
    match = re.fullmatch(r"([\d,.]+) (GB|TB/s|GB/s|TFLOPS|PFLOPS)(\*?)(?: / (\d+))?", text)
    number, unit, star, per = match.groups()
    return float(number.replace(",", "")) * UNITS[unit] / int(per or 1), bool(star)


@pytest.mark.parametrize("device, field, printed", PRINTED,
                         ids=[f"{d.name}-{f}" for d, f, _ in PRINTED])
def test_figure_is_the_datasheets(device, field, printed):
    """The stored figure is the datasheet's, and a starred (sparse) peak is stored as sparse."""
    value, sparse = read_printed(printed)
    stored = {"memory": device.memory_bytes, "bandwidth": device.hbm_bytes_per_s,
              "bf16": device.printed_bf16, "fp8": device.printed_fp8}[field]
    assert stored == pytest.approx(value, rel=1e-12)
    if field in ("bf16", "fp8"):
        assert device.printed_sparse == sparse


@pytest.mark.parametrize("device, dense_bf16, dense_fp8", [
    (hardware.H100, 989.5e12, 1979e12),      # half of the starred figures
    (hardware.H200, 989.5e12, 1979e12),      # the same Hopper die as H100, more and faster memory
    (hardware.B200, 2.25e15, 4.5e15),
    (hardware.MI300X, 1307.4e12, 2614.9e12),  # printed dense
    (hardware.A100, 312e12, None),
])
def test_dense_peaks(device, dense_bf16, dense_fp8):
    """Dense peaks are half the sparse datasheet figures, or the printed dense ones."""
    assert device.dense_bf16 == pytest.approx(dense_bf16, rel=1e-12)
    assert device.dense_fp8 == (None if dense_fp8 is None else pytest.approx(dense_fp8, rel=1e-12))


def test_b200_is_named_after_the_product_whose_memory_figure_it_carries():
    """B200's 180 GB is the DGX B200 datasheet's 1,440 GB over 8 GPUs, not the 192 GB often quoted;
    the device's name, its datasheet and w1's notebook all say DGX B200."""
    from tests.conftest import REPO
    assert hardware.B200.memory_bytes == 1440e9 / 8 != 192e9
    assert "DGX B200" in hardware.B200.name and "DGX B200" in hardware.B200.datasheet
    w1 = (REPO / "source" / "worked" / "w1-memory.pct.py").read_text()
    assert f'"device": "{hardware.B200.name}", "memory_bytes": 180e9' in w1
    assert "DGX B200 datasheet prints 1,440 GB for its 8 GPUs" in w1


def test_every_device_is_listed_by_name():
    """ACCELERATORS holds every device once, under its own name."""
    assert set(hardware.ACCELERATORS) == {d.name for d in (
        hardware.V100, hardware.A100, hardware.H100, hardware.H200, hardware.B200, hardware.MI300X)}
