"""Tools an LLM_CALL node offers the model: inline tools and the tool loop (SPEC §7)."""
