#!/usr/bin/python3
"""Independent numpy reference of Fairy2i-W2's weight quantization
(docs/FAIRY2I.md), written from the published code's rules:

  A (2n x 2m) -> U = ((A11 + A22) + i (A21 - A12)) / 2,
                 W = ((A11 - A22) + i (A12 + A21)) / 2
  each complex matrix -> codes in {+1, +i, -1, -i} by the angle sector
      (ties counterclockwise, (0, 0) -> +1 but (-0, -0) -> -1),
      s_re = mean |re| over the +-1 entries, s_im = mean |im| over the +-i
      entries (0 when empty), both clamped to >= 1e-6
  W2: stage 2 quantizes the residual w - q1 with its own scales

tern's arithmetic is float32 (mode "f32"); mode "bf16" rounds every step to
bfloat16 as the published PyTorch code does, so the two can be compared.

Codes are numbered as tern will store them: 0 = +1, 1 = +i, 2 = -1, 3 = -i.

usage:
  quantize.py --selftest       checks the sector rule against float64 angles,
                               the edge cases of docs/FAIRY2I.md, and that
                               the rebuilt real matrix is the widely-linear map
"""
import sys

import numpy as np

CODE_VALUES = np.array([1 + 0j, 1j, -1 + 0j, -1j], dtype=np.complex128)


def bf16(x):
    """Rounds float32 values to bfloat16 (nearest even), returned as float32."""
    a = np.atleast_1d(np.asarray(x, dtype=np.float32))
    u = a.view(np.uint32).astype(np.uint64)
    one, half, mask = np.uint64(1), np.uint64(0x7FFF), np.uint64(0xFFFF0000)
    rounded = (u + half + ((u >> np.uint64(16)) & one)) & mask
    out = np.where(np.isnan(a), a, rounded.astype(np.uint32).view(np.float32))
    return out.reshape(np.shape(x)) if np.ndim(x) else np.float32(out[0])


def split(A, mode="f32"):
    """(U_re, U_im, W_re, W_im) of a real (2n, 2m) weight."""
    A = np.asarray(A, dtype=np.float32)
    n, m = A.shape[0] // 2, A.shape[1] // 2
    if A.shape[0] % 2 or A.shape[1] % 2:
        raise ValueError("Fairy2i needs even sides, got %s" % (A.shape,))
    A11, A12, A21, A22 = A[:n, :m], A[:n, m:], A[n:, :m], A[n:, m:]
    r = (lambda v: bf16(v)) if mode == "bf16" else (lambda v: v)
    half = np.float32(0.5)
    return (r(r(A11 + A22) * half), r(r(A21 - A12) * half),
            r(r(A11 - A22) * half), r(r(A12 + A21) * half))


def sector(re, im):
    """Codes 0..3 by the half-open angle sectors, with comparisons only."""
    re = np.asarray(re, dtype=np.float32)
    im = np.asarray(im, dtype=np.float32)
    code = np.zeros(re.shape, dtype=np.uint8)
    code[(im > 0) & (-im < re) & (re <= im)] = 1           # +i
    code[(re < 0) & (re < im) & (im <= -re)] = 2           # -1
    code[(im < 0) & (im <= re) & (re < -im)] = 3           # -i
    # (+-0, +-0): angle 0, except (-0, -0), whose angle PyTorch makes pi.
    both_neg_zero = (re == 0) & (im == 0) & np.signbit(re) & np.signbit(im)
    code[both_neg_zero] = 2
    return code


def phase_quant(re, im, mode="f32"):
    """One stage: (codes, s_re, s_im, q_re, q_im)."""
    code = sector(re, im)
    on_re = (code == 0) | (code == 2)
    on_im = ~on_re
    mean = (lambda v: bf16(np.float32(v.mean(dtype=np.float64)))) if mode == "bf16" else \
        (lambda v: np.float32(v.mean(dtype=np.float64)))
    s_re = mean(np.abs(re[on_re])) if on_re.any() else np.float32(0)
    s_im = mean(np.abs(im[on_im])) if on_im.any() else np.float32(0)
    s_re, s_im = max(s_re, np.float32(1e-6)), max(s_im, np.float32(1e-6))
    if mode == "bf16":
        s_re, s_im = bf16(s_re), bf16(s_im)
    q_re = np.where(code == 0, s_re, np.where(code == 2, -s_re, 0)).astype(np.float32)
    q_im = np.where(code == 1, s_im, np.where(code == 3, -s_im, 0)).astype(np.float32)
    return code, np.float32(s_re), np.float32(s_im), q_re, q_im


def quantize_complex(re, im, stages=2, mode="f32"):
    """Residual stages: [(codes, s_re, s_im)], and the dequantized (re, im)."""
    r = (lambda v: bf16(v)) if mode == "bf16" else (lambda v: v)
    out, sum_re, sum_im = [], np.zeros_like(re), np.zeros_like(im)
    e_re, e_im = re, im
    for _ in range(stages):
        code, s_re, s_im, q_re, q_im = phase_quant(e_re, e_im, mode)
        out.append((code, s_re, s_im))
        sum_re, sum_im = r(sum_re + q_re), r(sum_im + q_im)
        e_re, e_im = r(e_re - q_re), r(e_im - q_im)
    return out, sum_re, sum_im


def quantize_linear(A, stages=2, mode="f32"):
    """{'U': stages, 'W': stages} and the rebuilt real (2n, 2m) matrix."""
    U_re, U_im, W_re, W_im = split(A, mode)
    u, uq_re, uq_im = quantize_complex(U_re, U_im, stages, mode)
    w, wq_re, wq_im = quantize_complex(W_re, W_im, stages, mode)
    r = (lambda v: bf16(v)) if mode == "bf16" else (lambda v: v)
    top = np.concatenate([r(wq_re + uq_re), r(wq_im - uq_im)], axis=1)
    bottom = np.concatenate([r(wq_im + uq_im), r(uq_re - wq_re)], axis=1)
    return {"U": u, "W": w}, np.concatenate([top, bottom], axis=0)


def widely_linear(U, W, x):
    """y = [Re; Im] of U x_c + W conj(x_c), x_c = x[:m] + i x[m:] (float64)."""
    m = x.shape[0] // 2
    xc = x[:m].astype(np.float64) + 1j * x[m:].astype(np.float64)
    y = U @ xc + W @ np.conj(xc)
    return np.concatenate([y.real, y.imag])


def eight_gemvs(planes, x):
    """y (2n) from the codes alone, as the kernels will compute it: per
    stage and per matrix, two ternary masks (real axis: +1 -> +1, -1 -> -1;
    imaginary axis: +i -> +1, -i -> -1) times both input halves a = x[:m]
    and b = x[m:], eight ternary GEMVs, combined with the four scales:

      Re y += sU_re Tr_U a - sU_im Ti_U b + sW_re Tr_W a + sW_im Ti_W b
      Im y += sU_re Tr_U b + sU_im Ti_U a - sW_re Tr_W b + sW_im Ti_W a
    """
    m = x.shape[0] // 2
    a, b = x[:m].astype(np.float64), x[m:].astype(np.float64)
    re = im = 0.0
    for name, sign in (("U", 1.0), ("W", -1.0)):
        for code, s_re, s_im in planes[name]:
            t_re = np.select([code == 0, code == 2], [1.0, -1.0], 0.0)
            t_im = np.select([code == 1, code == 3], [1.0, -1.0], 0.0)
            re = re + float(s_re) * (t_re @ a) - sign * float(s_im) * (t_im @ b)
            im = im + sign * float(s_re) * (t_re @ b) + float(s_im) * (t_im @ a)
    return np.concatenate([re, im])


def selftest():
    rng = np.random.default_rng(0)
    # 1. Away from ties the comparisons give the angle sectors.
    re = rng.standard_normal(200000).astype(np.float32)
    im = rng.standard_normal(200000).astype(np.float32)
    ang = np.arctan2(im.astype(np.float64), re.astype(np.float64))
    want = np.select([(ang >= -np.pi / 4) & (ang < np.pi / 4), (ang >= np.pi / 4) & (ang < 3 * np.pi / 4),
                      (ang >= 3 * np.pi / 4) | (ang < -3 * np.pi / 4)], [0, 1, 2], 3)
    off_tie = np.abs(re) != np.abs(im)
    assert (sector(re, im)[off_tie] == want[off_tie]).all(), "sectors disagree with angles"
    # 2. The edge cases of docs/FAIRY2I.md.
    a = np.float32(0.5)
    # A list, not a dict: -0.0 == 0.0 would merge keys.
    cases = [((a, a), 1), ((-a, a), 2), ((-a, -a), 3), ((a, -a), 0), ((0.0, 0.0), 0), ((-0.0, 0.0), 0),
             ((0.0, -0.0), 0), ((-0.0, -0.0), 2), ((0.0, a), 1), ((-0.0, -a), 3), ((-a, 0.0), 2),
             ((-a, -0.0), 2), ((a, 0.0), 0)]
    for (r_, i_), c in cases:
        got = int(sector(np.array([r_], np.float32), np.array([i_], np.float32))[0])
        assert got == c, "sector(%r, %r) = %d, want %d" % (r_, i_, got, c)
    # 3. Scales: means over each axis's own entries; an empty axis is 1e-6.
    code, s_re, s_im, _, _ = phase_quant(np.array([2, -4, 0.1], np.float32), np.array([1, 1, 3], np.float32))
    assert list(code) == [0, 2, 1] and s_re == 3 and s_im == 3, (code, s_re, s_im)
    _, s_re, s_im, _, _ = phase_quant(np.array([1, -1], np.float32), np.array([0, 0], np.float32))
    assert s_re == 1 and s_im == np.float32(1e-6)
    # 4. The rebuilt real matrix is the widely-linear map of the quantized U, W,
    #    and the unquantized split reproduces A exactly.
    n, m = 6, 10
    A = rng.standard_normal((2 * n, 2 * m)).astype(np.float32)
    U_re, U_im, W_re, W_im = split(A)
    x = rng.standard_normal(2 * m).astype(np.float32)
    y = widely_linear(U_re + 1j * U_im, W_re + 1j * W_im, x)
    assert np.allclose(y, A.astype(np.float64) @ x, atol=1e-5), "split is not A"
    planes, Aq = quantize_linear(A, stages=2)
    deq = {}
    for name in ("U", "W"):
        v = np.zeros((n, m), np.complex128)
        for code, s_re, s_im in planes[name]:
            v += np.where((code == 0) | (code == 2), float(s_re), float(s_im)) * CODE_VALUES[code]
        deq[name] = v
    y = widely_linear(deq["U"], deq["W"], x)
    assert np.allclose(y, Aq.astype(np.float64) @ x, atol=1e-5), "rebuild is not the widely-linear map"
    assert np.allclose(eight_gemvs(planes, x), y, atol=1e-9), "the eight ternary GEMVs are not the map"
    # 5. A second stage shrinks the error. The bf16 roundings move the result
    #    by a few percent (docs/FAIRY2I.md has the measurement), far less
    #    than the quantization error itself (~38% on Gaussian weights).
    _, A1 = quantize_linear(A, stages=1)
    assert np.linalg.norm(Aq - A) < np.linalg.norm(A1 - A)
    B = rng.standard_normal((256, 256)).astype(np.float32)
    _, Bq = quantize_linear(B, stages=2)
    _, Bb = quantize_linear(B, stages=2, mode="bf16")
    assert np.linalg.norm(Bb - Bq) < 0.1 * np.linalg.norm(Bq) < np.linalg.norm(Bq - B)
    print("fairy2i quantize selftest: ok")


if __name__ == "__main__":
    if sys.argv[1:] == ["--selftest"]:
        selftest()
    else:
        print(__doc__)
        sys.exit(2)
