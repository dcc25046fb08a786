"""Checks samconfig.toml with SAM CLI's own parsers: every parameter override of every environment
names a template parameter, survives SAM's parsing whole (an unquoted value with spaces is cut at
the first space), and satisfies the parameter's AllowedValues / AllowedPattern / MinValue /
MaxValue. Run by `make check-template` with the venv's Python."""
import re
import sys
import tomllib

from samcli.cli.types import CfnParameterOverridesType
from samcli.yamlhelper import yaml_parse

template = yaml_parse(open("template.yaml").read())
params = template["Parameters"]
config = tomllib.load(open("samconfig.toml", "rb"))
errors = []
for env, commands in config.items():
    if not isinstance(commands, dict):
        continue
    raw = commands.get("deploy", {}).get("parameters", {}).get("parameter_overrides", [])
    raw = [raw] if isinstance(raw, str) else raw
    parsed = CfnParameterOverridesType().convert(raw, None, None)
    for entry in raw:
        key, _, value = entry.partition("=")
        value = value.strip().strip('"')
        if key not in params:
            errors.append(f"[{env}] {key} is not a template parameter")
            continue
        if parsed.get(key) != value:
            errors.append(f"[{env}] {key}: SAM reads {parsed.get(key)!r}, not {value!r} (quote the value)")
        p = params[key]
        if "AllowedValues" in p and value not in [str(v) for v in p["AllowedValues"]]:
            errors.append(f"[{env}] {key}={value!r} is not one of {p['AllowedValues']}")
        if "AllowedPattern" in p and not re.fullmatch(p["AllowedPattern"], value):
            errors.append(f"[{env}] {key}={value!r} does not match {p['AllowedPattern']}")
        if p.get("Type") == "Number":
            n = float(value)
            if "MinValue" in p and n < float(p["MinValue"]) or "MaxValue" in p and n > float(p["MaxValue"]):
                errors.append(f"[{env}] {key}={value} is out of range")
    print(f"samconfig.toml [{env}]: {len(raw)} parameter overrides")
if errors:
    print("\n".join(errors), file=sys.stderr)
    sys.exit(1)
