"""The quorum controller (KIP-631): commands become records; only replay changes state."""
