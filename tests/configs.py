"""Test inputs shared by several test files: a small Llama-shaped config.json (as the Hugging Face Hub serves
one) for tests that write a model file, and a simulated card in MIG mode for the NVML, CLI and rule tests."""

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

MIG_ONE_JOB = """
[[gpus]]
model = "a100-sxm4-80gb"
mig_instances_mib = [40192, 19968]

[[processes]]
id = "train"
gpus = [0]
memory_gib = 20
mig_instance = 0
"""
"""An A100 80GB in MIG mode with two GPU instances (40,192 and 19,968 MiB); one 20 GiB job in the first."""
