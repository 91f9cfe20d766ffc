"""The forges' own contracts, applied to the fake forge's traffic (see `middleware`)."""
