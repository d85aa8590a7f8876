"""Megatron-Bridge (NVIDIA-NeMo/Megatron-Bridge): ``ConfigContainer`` YAML and recipe launch lines.

A Bridge run is a Megatron-Core run: the adapter reads Bridge's own spelling (``model.tensor_model_parallel_size``,
``train.global_batch_size``, ``ddp.overlap_grad_reduce``) and hands the values to the Megatron-LM adapter's spec
builder under Megatron-LM's argument names, so the estimator and the Megatron-Core start-up rules read the run as
they read a Megatron-LM script of the same run. Everything Bridge-specific is reachable from
:mod:`trainlint.adapters.bridge.framework`.
"""
