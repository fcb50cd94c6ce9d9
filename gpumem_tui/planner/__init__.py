"""Pure memory arithmetic for LLM serving and training: no I/O, records in, records out."""
