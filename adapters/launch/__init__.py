"""Launch commands shared by the frameworks: what `trainlint run -- CMD` runs, hostfiles."""
