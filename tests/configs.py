"""A small Llama-shaped config.json, as the Hugging Face Hub serves one, for tests that write a model file."""

SMALL_LLAMA = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 2048,
    "intermediate_size": 8192,
    "num_hidden_layers": 16,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "torch_dtype": "bfloat16",
    "max_position_embeddings": 32768,
}
