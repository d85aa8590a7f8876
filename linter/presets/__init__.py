"""The formats layer's GPUs and model presets: the GPU catalog, model architectures (presets,
local Hugging Face config.json files, the Hugging Face cache), parameter counts."""
