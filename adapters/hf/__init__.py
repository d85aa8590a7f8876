"""Hugging Face front ends of DeepSpeed runs: the Trainer's arguments and YAML, accelerate's config, tokenizer vocabularies."""
