"""TL1xx: the checks the frameworks themselves would fail at launch, decided statically.

Each rule quotes the framework's own condition and error text in its documentation, and its
message carries the numbers that led to it.

* :mod:`.cross_framework` the same failure in several frameworks (batch triple, world size
  divisibility, ZeRO >= 2 with pipeline parallelism, precision conflicts, heads and layers)
* :mod:`.deepspeed_rules`, :mod:`.megatron` (a package of rule families), :mod:`.neox_rules`: one framework's own checks
"""
