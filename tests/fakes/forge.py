"""FakeForge: the in-memory forge (`foundation.forge.inmemory.MemoryForge`) under the name tests use."""

from foundation.forge.inmemory import MemoryForge as FakeForge

__all__ = ["FakeForge"]
