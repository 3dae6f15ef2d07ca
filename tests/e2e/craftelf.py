"""Crafted ELF files for the hostile-input tests: small files that claim much, written
without a toolchain so that every field is the test's choice."""
import struct
import zlib

SHF_ALLOC, SHF_EXECINSTR, SHF_COMPRESSED = 0x2, 0x4, 0x800
SHT_PROGBITS, SHT_STRTAB, SHT_NOTE = 1, 3, 7
TEXT_ADDR, TEXT = 0x1000, b"\xc3" * 16


def zeros_zlib(size):
    """A zlib stream of size zero bytes (a multiple of 1 MiB), built from one compressed
    MiB repeated (a full flush makes each the same bytes): 2 GiB in ~2 MB, in well under
    a second."""
    mib = bytes(1 << 20)
    c = zlib.compressobj(9)
    first = c.compress(mib) + c.flush(zlib.Z_FULL_FLUSH)
    rest = c.compress(mib) + c.flush(zlib.Z_FULL_FLUSH)
    adler = 1
    n = size >> 20
    for _ in range(n):
        adler = zlib.adler32(mib, adler)
    # the last block: an empty stored one marked final, then the checksum
    return first + rest * (n - 1) + bytes([1, 0, 0, 0xff, 0xff]) + adler.to_bytes(4, "big")


def debug_frame():
    """One CIE (CFA = rsp + 8, return address at CFA - 8) and one FDE over .text."""
    cie = struct.pack("<IBB", 0xffffffff, 1, 0) + bytes([1, 0x78, 16, 0x0c, 7, 8, 0x90, 1])
    cie += bytes(-(len(cie) + 4) % 8)
    fde = struct.pack("<IQQ", 0, TEXT_ADDR, len(TEXT))
    fde += bytes(-(len(fde) + 4) % 8)
    return struct.pack("<I", len(cie)) + cie + struct.pack("<I", len(fde)) + fde


def debug_frame_rows(fdes, rows):
    """FDES FDEs of ROWS rows each (every byte of code a new CFA offset), 64 KiB apart:
    what libdw evaluates from each FDE's start for every row."""
    cie = struct.pack("<IBB", 0xffffffff, 1, 0) + bytes([1, 0x78, 16, 0x0c, 7, 8, 0x90, 1])
    cie += bytes(-(len(cie) + 4) % 8)
    out = struct.pack("<I", len(cie)) + cie
    body = bytes([0x41, 0x0e, 16, 0x41, 0x0e, 8]) * (rows // 2)
    for i in range(fdes):
        fde = struct.pack("<IQQ", 0, TEXT_ADDR + i * 0x10000, rows + 1) + body
        fde += bytes(-(len(fde) + 4) % 8)
        out += struct.pack("<I", len(fde)) + fde
    return out


def build_id_note(build_id):
    """A .note.gnu.build-id section's bytes (NT_GNU_BUILD_ID, owner "GNU")."""
    return struct.pack("<III", 4, len(build_id), 3) + b"GNU\0" + build_id + \
        bytes(-len(build_id) % 4)


def eh_frame_lie(rows):
    """.eh_frame with one FDE of ROWS rows over TEXT_ADDR.. and an .eh_frame_hdr whose
    search table claims an FDE at every one of those rows, each pointing at that one
    FDE: evaluated from each claimed start, the FDE costs ROWS^2/2 steps. As write's
    first two sections (("alloc" sections sit at their file offsets)."""
    cie = struct.pack("<IB", 0, 1) + b"zR\0" + bytes([1, 0x78, 16, 1, 0x1b,
                                                     0x0c, 7, 8, 0x90, 1])
    cie += bytes(-(len(cie) + 4) % 8)
    cie = struct.pack("<I", len(cie)) + cie
    frame_addr = TEXT_ADDR + len(TEXT)
    frame_addr += -frame_addr % 8
    fde_addr = frame_addr + len(cie)
    body = bytes([0]) + bytes([0x41, 0x0e, 16, 0x41, 0x0e, 8]) * (rows // 2)
    # CIE pointer: back from this field to the CIE; pc_begin: pc-relative
    fde = struct.pack("<Iii", fde_addr + 4 - frame_addr, TEXT_ADDR - (fde_addr + 8),
                      rows + 1) + body
    fde += bytes(-(len(fde) + 4) % 8)
    frame = cie + struct.pack("<I", len(fde)) + fde + bytes(4)
    hdr_addr = frame_addr + len(frame)
    hdr_addr += -hdr_addr % 8
    hdr = bytes([1, 0x1b, 0x03, 0x3b]) + struct.pack("<iI", frame_addr - (hdr_addr + 4), rows)
    hdr += b"".join(struct.pack("<ii", TEXT_ADDR + i - hdr_addr, fde_addr - hdr_addr)
                    for i in range(rows))
    return [(".eh_frame", frame, None, "alloc"), (".eh_frame_hdr", hdr, None, "alloc")]


def write(path, sections):
    """An x86-64 ELF shared object of one loaded page (its .text a few `ret`s) and the
    sections given as (name, bytes, claim[, type]): claim None stores bytes as they are;
    a claim compresses the section (SHF_COMPRESSED, zlib) holding that many zero bytes,
    bytes unused; type the section's (SHT_PROGBITS unless given)."""
    body = bytearray(TEXT_ADDR) + TEXT
    shstr = bytearray(b"\0")
    headers = [bytes(64)]

    def name_of(n):
        shstr.extend(n.encode() + b"\0")
        return len(shstr) - len(n) - 1

    def section(name, typ, flags, addr, data, align):
        body.extend(bytes(-len(body) % 8))
        off = len(body)
        body.extend(data)
        headers.append(struct.pack("<IIQQQQIIQQ", name_of(name), typ, flags, addr, off,
                                   len(data), 0, 0, align, 0))

    section(".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, TEXT_ADDR, b"", 16)
    # .text's bytes are the ones already at TEXT_ADDR
    headers[-1] = struct.pack("<IIQQQQIIQQ", 1, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR,
                              TEXT_ADDR, TEXT_ADDR, len(TEXT), 0, 0, 16, 0)
    for name, data, claim, *typ in sections:
        if claim is None and typ == ["alloc"]:
            # loaded data, at the address its file offset says (see eh_frame_lie)
            section(name, SHT_PROGBITS, SHF_ALLOC, len(body) + (-len(body) % 8), data, 8)
        elif claim is None:
            section(name, typ[0] if typ else SHT_PROGBITS, 0, 0, data, 8 if not typ else 4)
        else:
            chdr = struct.pack("<IIQQ", 1, 0, claim, 1)
            section(name, SHT_PROGBITS, SHF_COMPRESSED, 0, chdr + zeros_zlib(claim), 8)
    shstrndx = len(headers)
    section(".shstrtab", SHT_STRTAB, 0, 0, b"", 1)
    name = name_of(".shstrtab")
    off = len(body)
    body.extend(shstr)
    headers[-1] = struct.pack("<IIQQQQIIQQ", name, SHT_STRTAB, 0, 0, off, len(shstr), 0, 0,
                              1, 0)
    body.extend(bytes(-len(body) % 8))
    shoff = len(body)
    for h in headers:
        body.extend(h)
    ehdr = (b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8) +
            struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 64, shoff, 0, 64, 56, 1, 64,
                        len(headers), shstrndx))
    phdr = struct.pack("<IIQQQQQQ", 1, 5, 0, 0, 0, TEXT_ADDR + len(TEXT),
                       TEXT_ADDR + len(TEXT), 0x1000)
    body[0:64 + 56] = ehdr + phdr
    with open(path, "wb") as f:
        f.write(body)
