"""Schema files, presets and validation with clear errors."""

import json

import pytest

from tiny_graphrag.errors import MissingDependencyError, SchemaError
from tiny_graphrag.schema import PRESETS, Schema

TOML = """
entity_types = ["Person", "Organization"]
[relation_types."works for"]
allowed_head = ["Person"]
allowed_tail = ["Organization"]
[relation_types."related to"]
"""

YAML = """
entity_types: [Person, Organization]
relation_types:
  works for: {allowed_head: [Person], allowed_tail: [Organization]}
  related to: {}
"""


@pytest.mark.parametrize("suffix, text", [(".toml", TOML), (".yaml", YAML), (".json", None)])
def test_schema_files(tmp_path, suffix, text):
    if text is None:
        text = json.dumps(
            {
                "entity_types": ["Person", "Organization"],
                "relation_types": {
                    "works for": {"allowed_head": ["Person"], "allowed_tail": ["Organization"]},
                    "related to": {},
                },
            }
        )
    p = tmp_path / f"schema{suffix}"
    p.write_text(text, encoding="utf-8")
    s = Schema.from_file(p)
    assert s.entity_types == ("Person", "Organization")
    assert s.allows("works for", "Person", "Organization")
    assert not s.allows("works for", "Organization", "Person")
    assert s.allows("related to", "Organization", "Organization")
    assert not s.allows("unknown", "Person", "Organization")
    assert Schema.from_dict(s.to_dict()) == s


def test_yaml_schema_without_pyyaml_names_the_extra(tmp_path, monkeypatch):
    # The file is fine: the error must say what to install, not that it "could not be parsed".
    monkeypatch.setitem(__import__("sys").modules, "yaml", None)  # `import yaml` raises ImportError
    p = tmp_path / "schema.yaml"
    p.write_text(YAML, encoding="utf-8")
    with pytest.raises(MissingDependencyError, match=r"tiny-graphrag\[yaml\]") as info:
        Schema.from_file(p)
    assert "could not be parsed" not in str(info.value)


@pytest.mark.parametrize(
    "data, message",
    [
        ({"entity_types": ["Person"], "colour": 1}, "unknown key"),
        ({"relation_types": ["x"]}, "'entity_types' is missing"),
        ({"entity_types": []}, "at least one entity type"),
        ({"entity_types": ["Person", ""]}, "non-empty"),
        ({"entity_types": ["Person", "person"]}, "duplicate"),
        ({"entity_types": "Person"}, "must be a list"),
        (
            {"entity_types": ["Person"], "relation_types": {"knows": {"allowed_head": ["Persn"]}}},
            "not declared entity types",
        ),
        ({"entity_types": ["Person"], "relation_types": {"knows": {"allowed_heads": ["Person"]}}}, "unknown key"),
        ({"entity_types": ["Person"], "relation_types": {"knows": {"allowed_head": "Person"}}}, "must be a list"),
        ({"entity_types": ["Person"], "relation_types": 3}, "must be a list of labels or a mapping"),
    ],
)
def test_invalid_schemas(data, message):
    with pytest.raises(SchemaError, match=message):
        Schema.from_dict(data)


def test_bad_files(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text("entity_types = [", encoding="utf-8")
    with pytest.raises(SchemaError, match="could not be parsed"):
        Schema.from_file(p)
    q = tmp_path / "s.ini"
    q.write_text("x", encoding="utf-8")
    with pytest.raises(SchemaError, match="unsupported extension"):
        Schema.from_file(q)
    with pytest.raises(SchemaError, match="does not exist"):
        Schema.from_file(tmp_path / "missing.toml")


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_are_valid(name):
    s = Schema.preset(name)
    assert s.entity_types and s.relation_types
    assert Schema.load(name) == s


def test_list_of_relation_labels_allows_any_types():
    s = Schema.from_dict({"entity_types": ["A", "B"], "relation_types": ["r"]})
    assert s.allows("r", "A", "B") and s.allows("r", "B", "A")
    with pytest.raises(SchemaError, match="unknown schema preset"):
        Schema.preset("nope")
