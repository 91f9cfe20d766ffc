"""FakeForge: the in-memory forge (`bot.forge.memory.MemoryForge`) under the name tests use."""

from bot.forge.memory import MemoryForge as FakeForge

__all__ = ["FakeForge"]
