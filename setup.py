"""Package discovery for the two top-level packages of the capevolve distribution.

``capevolve`` is found as usual; ``capevolve_adapters`` lives in the ``adapters/`` folder
(its name in the source tree) and is mapped to its installed name here, because the static
``[tool.setuptools.packages.find]`` table cannot rename a folder. Everything else is in
pyproject.toml.
"""

from setuptools import find_packages, setup

ADAPTERS = ["capevolve_adapters", *(f"capevolve_adapters.{name}"
                                    for name in find_packages("adapters"))]

setup(
    packages=[*find_packages(include=["capevolve", "capevolve.*"]), *ADAPTERS],
    package_dir={"capevolve_adapters": "adapters"},
)
