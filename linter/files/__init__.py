"""The formats layer's shared file code: finding and reading files with the adapters, the project
config file, path confinement and trust, schema checks, writing a file back."""
