"""The reference agent workflows built on duraguard (not part of the wheel)."""
