"""torchbot: variant selection engine, command layer and chat front ends."""
