"""Accelerators the chapter's variants run on, with the figures their vendors' datasheets print.

One place for every device figure a problem uses (memory, HBM bandwidth, dense BF16 and FP8
tensor peaks), so that w1, w2 and e07 cannot drift apart. Figures are stored as the datasheet
prints them; the dense peaks are derived here.

Dense and sparse. NVIDIA's datasheets for H100, H200 and the DGX and HGX B200 print the
tensor-core peaks *with 2:4 structured sparsity* only (marked "* With sparsity"); the dense peak
that a training run can approach is half of it. The A100 datasheet and AMD's MI300X datasheet
print the dense peak with the sparse one beside it (we store the dense one). V100 predates
sparsity, so its figure is dense. `dense_bf16` and
`dense_fp8` are always the dense figures.

Sources (the vendor's datasheet of each part):
- NVIDIA Tesla V100 (SXM2 32 GB) datasheet: 32 GB HBM2, 900 GB/s, tensor performance 125 TFLOPS
  (fp16; no bf16 or FP8 units).
- NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM): 80 GB HBM2e, 2,039 GB/s,
  BF16 tensor core 312 TFLOPS | 624 TFLOPS* (no FP8 units).
- NVIDIA H100 Tensor Core GPU datasheet (H100 SXM): 80 GB, 3.35 TB/s, BF16 tensor core
  1,979 teraFLOPS*, FP8 tensor core 3,958 teraFLOPS* ("* With sparsity").
- NVIDIA H200 Tensor Core GPU datasheet (H200 SXM): 141 GB HBM3e, 4.8 TB/s, BF16 tensor core
  1,979 TFLOPS*, FP8 tensor core 3,958 TFLOPS* ("* With sparsity").
- NVIDIA DGX B200 datasheet: 8 Blackwell GPUs, 1,440 GB total GPU memory, 64 TB/s HBM3e
  bandwidth, 72 PFLOPS FP8 training (sparse); the HGX B200 table prints FP16/BF16 tensor core
  36 PFLOPS and FP8 72 PFLOPS for 8 GPUs, with sparsity. Per GPU: 180 GB, 8 TB/s, 4.5 PFLOPS
  BF16 and 9 PFLOPS FP8 sparse. The memory is the DGX B200's: the 192 GB often quoted for a
  B200 is not what this datasheet gives its GPUs, so the device is named after the product
  whose figures it carries.
- AMD Instinct MI300X accelerator datasheet: 192 GB HBM3, 5.3 TB/s peak memory bandwidth,
  peak BF16 1307.4 TFLOPs (2614.9 with structured sparsity), peak FP8 2614.9 TFLOPs
  (5229.8 with structured sparsity).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Accelerator:
    """One device as its datasheet prints it."""
    name: str
    datasheet: str
    memory_bytes: float          # HBM capacity (1 GB = 1e9 bytes, as datasheets count)
    hbm_bytes_per_s: float       # peak memory bandwidth
    printed_bf16: float          # tensor-core BF16 (V100: fp16) peak, FLOP/s, as printed
    printed_fp8: float | None    # FP8 peak, FLOP/s, as printed (None: no FP8 units)
    printed_sparse: bool         # the printed peaks are with 2:4 structured sparsity

    @property
    def dense_bf16(self) -> float:
        """Dense 16-bit tensor peak (FLOP/s): half the printed figure when that one is sparse."""
        return self.printed_bf16 / 2 if self.printed_sparse else self.printed_bf16

    @property
    def dense_fp8(self) -> float | None:
        """Dense FP8 tensor peak (FLOP/s), or None for a device without FP8 units."""
        if self.printed_fp8 is None:
            return None
        return self.printed_fp8 / 2 if self.printed_sparse else self.printed_fp8


V100 = Accelerator("NVIDIA V100 SXM2 32GB", "NVIDIA Tesla V100 datasheet",
                   32e9, 900e9, 125e12, None, printed_sparse=False)
A100 = Accelerator("NVIDIA A100 SXM 80GB", "NVIDIA A100 Tensor Core GPU datasheet",
                   80e9, 2039e9, 312e12, None, printed_sparse=False)
H100 = Accelerator("NVIDIA H100 SXM", "NVIDIA H100 Tensor Core GPU datasheet",
                   80e9, 3.35e12, 1979e12, 3958e12, printed_sparse=True)
H200 = Accelerator("NVIDIA H200 SXM", "NVIDIA H200 Tensor Core GPU datasheet",
                   141e9, 4.8e12, 1979e12, 3958e12, printed_sparse=True)
B200 = Accelerator("NVIDIA B200 (DGX B200)", "NVIDIA DGX B200 datasheet (per GPU: 1/8 of the system)",
                   1440e9 / 8, 64e12 / 8, 36e15 / 8, 72e15 / 8, printed_sparse=True)
MI300X = Accelerator("AMD Instinct MI300X", "AMD Instinct MI300X accelerator datasheet",
                     192e9, 5.3e12, 1307.4e12, 2614.9e12, printed_sparse=False)

ACCELERATORS = {device.name: device for device in (V100, A100, H100, H200, B200, MI300X)}
