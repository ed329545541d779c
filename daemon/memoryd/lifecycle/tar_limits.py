"""Reading an archive with every size bounded before the bytes are held.

``tarfile`` trusts a header's size: a GNU long name or a pax header of 3 GB is read whole
into memory, and gzip data can unpack a thousand times its size. So an import reads the tar
stream through ``Bounded`` (decompressing in steps, never more than asked for, and refusing
as soon as the total unpacked passes the limit) and with ``HeaderBound`` headers (a long name
or a pax header larger than ``MAX_HEADER_BYTES`` is refused before it is read).
"""

from __future__ import annotations

import io
import tarfile
import zlib
from typing import Any, BinaryIO, Final

from memoryd.errors import TooLarge

__all__ = ["MAX_HEADER_BYTES", "Bounded", "HeaderBound", "is_gzip"]

MAX_HEADER_BYTES: Final = 64 << 10  # a GNU long name or pax header; ours are a few bytes
_STEP: Final = 1 << 16


def is_gzip(head: bytes) -> bool:
    return head[:2] == b"\x1f\x8b"


class Bounded(io.RawIOBase):
    """The tar stream of ``raw`` (gunzipped when ``gz``), at most ``limit`` bytes of it:
    TooLarge as soon as more would come out, whatever the headers say."""

    def __init__(self, raw: BinaryIO, limit: int, gz: bool) -> None:
        super().__init__()
        self._raw = raw
        self._limit = limit
        self._z = zlib.decompressobj(16 + zlib.MAX_WBITS) if gz else None
        self._pending = b""
        self._eof = False
        self.unpacked = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        want = _STEP if size is None or size < 0 else size
        while len(self._pending) < want and not self._eof:
            self._fill(want - len(self._pending))
        out, self._pending = self._pending[:want], self._pending[want:]
        self.unpacked += len(out)
        if self.unpacked > self._limit:
            raise TooLarge(
                f"the archive unpacks to more than {self._limit} bytes: nothing imported",
                {"max_bytes": self._limit},
            )
        return out

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def _fill(self, need: int) -> None:
        if self._z is None:
            chunk = self._raw.read(min(need, _STEP))
            self._eof = not chunk
            self._pending += chunk
            return
        data = self._z.unconsumed_tail or self._raw.read(_STEP)
        if not data or self._z.eof:
            self._eof = True
            return
        # Never more out of one step than asked for: a bomb stays in its compressed form.
        self._pending += self._z.decompress(data, min(need, _STEP))


class HeaderBound(tarfile.TarInfo):
    """A member header whose extended headers are refused past MAX_HEADER_BYTES."""

    def _bound(self) -> None:
        if self.size > MAX_HEADER_BYTES:
            raise TooLarge(
                f"the archive has a {self.size}-byte header (a long name or pax header; at "
                f"most {MAX_HEADER_BYTES}): nothing imported",
                {"max_bytes": MAX_HEADER_BYTES},
            )

    def _proc_gnulong(self, tar: tarfile.TarFile) -> Any:
        self._bound()
        return getattr(super(), "_proc_gnulong")(tar)  # noqa: B009 - private in typeshed

    def _proc_pax(self, tar: tarfile.TarFile) -> Any:
        self._bound()
        return getattr(super(), "_proc_pax")(tar)  # noqa: B009 - private in typeshed
