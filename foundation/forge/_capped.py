"""A file read from the forge as a stream, stopped at a size and a time limit (both adapters).

A repository's file is anyone's content: `.forgebot.yml` is read by the receiver for every label
delivery, and reading a 40 MB one whole before checking its size once cost 75 MB and outlasted
the look-up's timeout. So the response is streamed and refused as soon as its declared length, or
the bytes that have arrived, pass the limit, or the read outlasts its deadline; the connection is
closed either way, so nothing more is downloaded.
"""

from __future__ import annotations

import time

import requests

from foundation.forge.errors import ForgeError, ForgeUnavailable

CHUNK = 16 * 1024


class FileTooLarge(ForgeError):
    """The file is larger than the caller accepts; nothing past the limit was read."""


def read_capped(response: requests.Response, limit: int, what: str, seconds: float) -> bytes:
    """The body of a streamed `response`, at most `limit` bytes, within `seconds`; closed at the end."""
    deadline = time.monotonic() + seconds
    try:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise FileTooLarge(f"{what} is larger than {limit} bytes")
        data = bytearray()
        for chunk in response.iter_content(chunk_size=CHUNK):
            data += chunk
            if len(data) > limit:
                raise FileTooLarge(f"{what} is larger than {limit} bytes")
            if time.monotonic() > deadline:
                raise ForgeUnavailable(f"{what} took longer than {seconds:g} s to download")
        return bytes(data)
    finally:
        response.close()
