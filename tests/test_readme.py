"""The README's code examples run and print what the README says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_driver_example_runs_and_prints_what_the_readme_shows():
    section = README[README.index("## The driver and the Linux SME ABI"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    shown = re.search(r"prints\n\n```\n(.*?)```", section, re.S).group(1)
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(code, "README.md", "exec"), {})
    assert output.getvalue() == shown


def test_the_forms_table_is_the_instruction_table():
    from script_modules import load_script
    generated = load_script("isa_forms").markdown()
    shown = re.search(r"<!-- forms -->\n(.*?)<!-- /forms -->", README, re.S).group(1)
    assert shown == generated, "run `python scripts/isa_forms.py` and paste its table"


def test_the_register_map_table_is_the_register_table():
    from zatile.hw.soc.registers import register_map_markdown
    shown = re.search(r"<!-- registers -->\n(.*?)<!-- /registers -->", README, re.S).group(1)
    assert shown == register_map_markdown(), "paste hw.soc.registers.register_map_markdown()"
