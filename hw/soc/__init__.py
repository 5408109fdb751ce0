"""The SoC wrapper: the engine on AXI4 (memory) and AXI4-Lite (control), for FPGA SoCs."""
