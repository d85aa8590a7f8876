"""The core model: what every layer speaks (the spec, a file's results, provenance and positions,
diagnostics, the Framework protocol, the hook specifications). It imports no other layer."""
