"""GPT-NeoX's key catalog for one checked release: the keys its argument dataclasses define.

A NeoX config is one flat mapping of its arguments, so what a release (a fork's checkout, a stated
release) defines is a schema of its own: exactly the release's argument names, typed as trainlint's
table types them where the table has the name, with the choices the release's ``Literal`` annotations
give (a fork's own values). ``NeoXFramework.key_catalog(target)`` returns it, so the reader validates
against the catalog it is given and never builds a schema from the target beside it.
"""

from __future__ import annotations

from trainlint.frameworks.keys import ReleaseKeyCatalog


class NeoXReleaseKeys(ReleaseKeyCatalog):
    _schema: dict | None = None

    def schema(self) -> dict | None:
        if self._schema is None:
            base = super().schema() or {}
            release = self.release()
            props: dict = {}
            for key, arg in release.args.items():
                prop = dict(base.get("properties", {}).get(key, {}))
                prop.pop("enum", None)
                if arg.choices:
                    nullable = None not in arg.choices and "null" in str(prop.get("type"))
                    prop["enum"] = list(arg.choices) + ([None] if nullable else [])
                props[key] = prop
            # built once per release object (the schema checker caches per schema object)
            self._schema = dict(base, properties=props)
        return self._schema
