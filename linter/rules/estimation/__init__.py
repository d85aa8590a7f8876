"""TL2xx-TL4xx and TL900: rules on the estimate (memory, throughput, communication).

Each finding carries a fix computed by re-estimating modified copies of the spec
(:mod:`.fixes`), spelled in the input format's own terms.
"""
