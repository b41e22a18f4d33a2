"""kvmath: exact KV-cache memory from a model config."""
