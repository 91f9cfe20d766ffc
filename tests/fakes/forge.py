"""FakeForge: the in-memory forge (`foundation.forge.memory.MemoryForge`) under the name tests use."""

from foundation.forge.memory import MemoryForge as FakeForge

__all__ = ["FakeForge"]
