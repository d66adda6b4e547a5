"""Minimal safetensors reader/writer (the `safetensors` package is not installed).

Format: u64 little-endian header length N, N bytes of JSON
{name: {"dtype", "shape", "data_offsets": [begin, end]}}, then raw
little-endian tensor bytes; offsets are relative to the end of the header.
Only the dtypes we ship (BF16, F32) are handled.
"""
import json, struct, sys
import numpy as np
import torch

assert sys.byteorder == "little"


def save(path, tensors, metadata=None):
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        if t.dtype == torch.bfloat16:
            dt, raw = "BF16", t.view(torch.int16).numpy().tobytes()
        elif t.dtype == torch.float32:
            dt, raw = "F32", t.numpy().tobytes()
        else:
            raise ValueError(f"{name}: unsupported dtype {t.dtype}")
        header[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)          # keep tensor data 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def load(path):
    """Returns {name: float32 torch tensor}; BF16 is widened exactly."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    base, out = 8 + n, {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        buf = data[base + b:base + e]
        if info["dtype"] == "BF16":
            a = (np.frombuffer(buf, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        elif info["dtype"] == "F32":
            a = np.frombuffer(buf, dtype="<f4").copy()
        else:
            raise ValueError(f"{name}: unsupported dtype {info['dtype']}")
        out[name] = torch.from_numpy(a.reshape(info["shape"]))
    return out
