"""A minimal GGUF v3 reader and writer of the test tools' own (not tern's),
so a tool can check or rewrite tern's files without trusting tern's code.

    kv, infos, data, base, align = read_gguf(path)
kv: [(key, value type, value)], an array's value (element type, [items]);
infos: [(name, dims, tensor type, offset from base)]; data: the file's bytes.
"""
import struct

SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


class Reader:
    def __init__(self, data):
        self.d, self.p = data, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.d, self.p)[0]
        self.p += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take("<Q")
        s = self.d[self.p:self.p + n].decode("utf-8")
        self.p += n
        return s

    def value(self, t):
        if t == 8:
            return self.string()
        if t == 9:
            et, n = self.take("<I"), self.take("<Q")
            return (et, [self.value(et) for _ in range(n)])
        if t not in SCALARS:
            raise ValueError(f"unknown GGUF value type {t}")
        return self.take(SCALARS[t])


def read_gguf(path):
    data = open(path, "rb").read()
    r = Reader(data)
    if data[:4] != b"GGUF" or struct.unpack_from("<I", data, 4)[0] != 3:
        raise SystemExit(f"{path}: not a GGUF v3 file")
    r.p = 8
    n_tensors, n_kv = r.take("<Q"), r.take("<Q")
    kv = []
    for _ in range(n_kv):
        key = r.string()
        t = r.take("<I")
        kv.append((key, t, r.value(t)))
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        dims = [r.take("<Q") for _ in range(r.take("<I"))]
        infos.append((name, dims, r.take("<I"), r.take("<Q")))
    align = next((v for k, t, v in kv if k == "general.alignment"), 32)
    base = (r.p + align - 1) // align * align
    return kv, infos, data, base, align


def write_value(out, t, v):
    if t in SCALARS:
        out += struct.pack(SCALARS[t], v)
    elif t == 8:
        b = v.encode("utf-8")
        out += struct.pack("<Q", len(b)) + b
    else:
        et, items = v
        out += struct.pack("<IQ", et, len(items))
        for x in items:
            write_value(out, et, x)


def write_gguf(path, kv, tensors, align):
    """kv as read_gguf gives it; tensors: [(name, dims, type, raw bytes)]."""
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv)))
    for key, t, v in kv:
        write_value(out, 8, key)
        out += struct.pack("<I", t)
        write_value(out, t, v)
    off = 0
    for name, dims, t, raw in tensors:
        write_value(out, 8, name)
        out += struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", t, off)
        off = (off + len(raw) + align - 1) // align * align
    out += bytes(-len(out) % align)
    for _, _, _, raw in tensors:
        out += raw + bytes(-len(raw) % align)
    open(path, "wb").write(out)
