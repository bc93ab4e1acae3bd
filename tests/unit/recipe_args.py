"""recipe_args.py: the argument names of a recipe in order, read from its Lua text without a Lua
interpreter, for the peer tests that check a peer module's arg index (the worker seeds each input
by its index) against the recipe.

A recipe lists its args in `args = {...}`, or builds them with a shared module's args function
(`args = common.args({...}, ...)`, e.g. recipes/attention/shared/decode.lua): that function's own
entries come before and after the loop that appends the recipe's list."""
import os
import re

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
# an arg entry: { "name", tensor|scalar|tensormap = ...}, or { var, ...} whose name is a Lua variable
# of the shared module's function (returned as "$var")
ENTRY = re.compile(r'\{ (?:"(\w+)"|(\w+)),\s*(?:tensor|scalar|tensormap)\s*=')


def _names(text):
    return [n or "$" + v for n, v in ENTRY.findall(text)]


def _read(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return f.read()


def arg_names(recipe_rel, common_rel=None):
    """The args of recipes/<recipe_rel> (e.g. "attention/decode.lua"), through
    recipes/<common_rel>'s `function M.args` when the recipe calls it."""
    text = _read(os.path.join("recipes", recipe_rel))
    if common_rel is None:
        body = text[text.index("\n  args = {"):text.index("\n  reference = ")]
        return _names(body)
    own = text[text.index("\n  args = common.args("):text.index("\n  reference = ")]
    common = _read(os.path.join("recipes", common_rel))
    body = common[common.index("function M.args("):]
    body = body[:body.index("\nend\n")]
    cut = body.index("for _, e in ipairs(")
    return _names(body[:cut]) + _names(own) + _names(body[cut:])
