"""Repeated units as one Verilog module each, instantiated by name.

Amaranth elaborates every instance of a component anew and writes each as its own Verilog
module. The outer-product arrays hold hundreds of identical units (one per tile element), which
makes the Verilog, its generation time and every simulator build grow with the instance count.
A :class:`ModuleLibrary` converts each distinct unit once, to a module of its own name, and
stands an :class:`~amaranth.hdl.Instance` of it wherever the unit is used; the generated Verilog
then holds one module per unit kind, which Verilator compiles once.

Without a library (``library=None``) :func:`place` adds the component as an ordinary submodule,
so designs stay simulatable with :mod:`amaranth.sim`.
"""

from __future__ import annotations

from typing import Callable

from amaranth import ClockSignal, Instance, ResetSignal
from amaranth.back import verilog
from amaranth.lib import wiring

__all__ = ["ModuleLibrary", "place"]


class ModuleLibrary:
    """Verilog modules converted once, by module name.

    Attributes
    ----------
    modules : dict of str to str
        Module name to its Verilog text (the unit's own submodules included).
    """

    def __init__(self):
        self.modules: dict[str, str] = {}
        self._clocked: dict[str, bool] = {}
        self._signatures: dict[str, wiring.Signature] = {}

    def instantiate(self, m, instance_name: str, module_name: str,
                    make: Callable[[], wiring.Component]):
        """Add an instance of ``module_name`` to ``m`` and return its interface.

        ``make`` builds the component; it is called, and the component converted to Verilog, only
        the first time a module name is seen (its signature serves every later instance). The
        returned object has the component's members as fresh signals, connected to the instance's
        ports.
        """
        if module_name not in self.modules:
            component = make()
            text = verilog.convert(component, name=module_name, emit_src=False,
                                   strip_internal_attrs=True)
            self.modules[module_name] = text
            header = text[text.index(f"module {module_name}("):].split(";", 1)[0]
            self._clocked[module_name] = "clk" in header.replace("(", ",").replace(")", ",") \
                .replace(" ", "").split(",")
            self._signatures[module_name] = component.signature
        signature = self._signatures[module_name]
        interface = signature.create(path=(instance_name,))
        ports = {}
        for path, member, value in signature.flatten(interface):
            prefix = "i_" if member.flow == wiring.In else "o_"
            ports[prefix + "__".join(str(part) for part in path)] = value
        if self._clocked[module_name]:
            ports.update(i_clk=ClockSignal(), i_rst=ResetSignal())
        m.submodules[instance_name] = Instance(module_name, **ports)
        return interface

    def verilog(self) -> str:
        """Every module of the library, for appending to the design's Verilog."""
        return "\n".join(self.modules.values())


def place(m, library: ModuleLibrary | None, instance_name: str, module_name: str,
          make: Callable[[], wiring.Component]):
    """A unit in ``m``: an instance from ``library``, or an ordinary submodule without one."""
    if library is None:
        component = make()
        m.submodules[instance_name] = component
        return component
    return library.instantiate(m, instance_name, module_name, make)
