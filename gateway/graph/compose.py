"""Join fields that other modules contribute onto an existing Strawberry object type.

GraphQL has ``extend type``; Strawberry has no counterpart, and a subclass is
no substitute: it is a second Python type with the same GraphQL name, and
Strawberry refuses two definitions of one name (``DuplicatedTypeName``), while
every field declared elsewhere as returning the original type would keep
showing the original's fields. So the contributed fields go into the original
type's own definition, which is what Strawberry itself does with the fields of
a ``@strawberry.type`` base class: it lists the same ``StrawberryField``
objects in the subclass' definition. A field keeps the type annotation and
module namespace of the class it was declared in, so its return type is
resolved there when the schema is built.

A contribution is a ``@strawberry.type`` class whose resolvers read only what
the target's instances have (declare those as ``strawberry.Private``
attributes, which are no GraphQL fields).
"""

from __future__ import annotations

from strawberry.types.base import get_object_definition
from strawberry.types.private import is_private


def join_fields(target: type, *contributions: type) -> None:
    """Add every GraphQL field of ``contributions`` to ``target``'s definition.

    Idempotent for the same contribution; a name already taken by another field
    is an error, never a silent override. Private attributes are not fields and
    stay behind.
    """
    definition = get_object_definition(target, strict=True)
    for contribution in contributions:
        for field in get_object_definition(contribution, strict=True).fields:
            if is_private(field.type):
                continue
            present = next((f for f in definition.fields if f.python_name == field.python_name), None)
            if present is field:
                continue
            if present is not None:
                raise TypeError(
                    f"{contribution.__name__}.{field.python_name} is already a field of {target.__name__}"
                )
            definition.fields.append(field)
