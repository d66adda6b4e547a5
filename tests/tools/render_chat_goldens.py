#!/usr/bin/python3
"""Renders tests/data/chat/goldens.json: what Hugging Face's apply_chat_template
makes of each template in tests/data/chat/*.jinja over a set of conversations,
plus a table of small templates ("snippets") that pin down the Jinja subset
tern's chat template interpreter implements. test_chat_template checks every
case byte for byte.

The environment is the one transformers builds in
utils/chat_template_utils.py (_compile_jinja_template):
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
extensions=[AssistantTracker, loopcontrols]), tojson replaced by
json.dumps(ensure_ascii=False, ...), globals raise_exception and strftime_now,
rendered with messages, tools=None, documents=None, add_generation_prompt and
the special tokens.

    /usr/bin/python3 tests/tools/render_chat_goldens.py   # Debian's python3-jinja2
"""

import json
import os
import sys
from datetime import datetime

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "chat")


class TemplateRaised(Exception):
    """raise_exception(msg) from a template."""


class Generation(jinja2.ext.Extension):
    # transformers' AssistantTracker, without the tracking: the body renders as is.
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_env():
    def raise_exception(message):
        raise TemplateRaised(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[Generation, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


ENV = make_env()


def render(source, variables):
    """{"output": text} or {"error": message, "raised": bool}."""
    try:
        return {"output": ENV.from_string(source).render(**variables)}
    except TemplateRaised as e:
        return {"error": str(e), "raised": True}
    except Exception as e:  # undefined values, type errors, syntax errors
        return {"error": f"{type(e).__name__}: {e}", "raised": False}


# ---------------------------------------------------------------- templates

TOKENS = {
    "bitnet": ("<|begin_of_text|>", "<|eot_id|>"),
    "chatml": ("<s>", "<|im_end|>"),
    "falcon3": ("", "<|endoftext|>"),
    "llama2": ("<s>", "</s>"),
    "llama3": ("<|begin_of_text|>", "<|eot_id|>"),
    "llama3.1": ("<|begin_of_text|>", "<|eot_id|>"),
    "qwen2": ("", "<|im_end|>"),
    "qwen3": ("", "<|im_end|>"),
}


def msg(role, content):
    return {"role": role, "content": content}


CONVERSATIONS = {
    "empty": [],
    "user": [msg("user", "Hello!")],
    "system_user": [msg("system", "You are a helpful assistant."), msg("user", "What is 2+2?")],
    "multi_turn": [msg("user", "Hi"), msg("assistant", "Hello! How can I help?"), msg("user", "Tell me a joke.")],
    "system_multi_turn": [msg("system", "Be brief."), msg("user", "Hi"), msg("assistant", "Hello."),
                          msg("user", "Bye"), msg("assistant", "Goodbye.")],
    "whitespace": [msg("system", "  \n  Indented system.\n\n"), msg("user", "\n\tTabbed and spaced   "),
                   msg("assistant", "   "), msg("user", " x ")],
    "non_ascii": [msg("user", "Grüße, 世界! 🙂 — naïve café ½\u00a0"), msg("assistant", "Ça va, ¿y tú? Ελλάδα ДА"),
                  msg("user", "\u2028line\u2029sep\u3000")],
    "jinja_text": [msg("user", "{{ x }} {% if true %}y{% endif %} {# c #} {{- raw -}}"),
                   msg("assistant", "'quotes' \"double\" \\backslash\\ \\n"), msg("user", "{% raise_exception('no') %}")],
    "not_alternating": [msg("user", "first"), msg("user", "second")],
    "assistant_first": [msg("assistant", "I start."), msg("user", "OK")],
    "system_only": [msg("system", "Only a system prompt.")],
    # A reply with its reasoning, as Qwen3 writes it: the template keeps the
    # <think> part only after the last user turn.
    "reasoning_last": [msg("user", "What is 2+2?"), msg("assistant", "<think>\nAdd them.\n</think>\n\n4")],
    "reasoning_history": [msg("user", "What is 2+2?"), msg("assistant", "<think>\nAdd them.\n</think>\n\n4"),
                          msg("user", "And 3+3?")],
    "tool_result": [msg("user", "Weather in Paris?"), msg("assistant", "Let me check."),
                    msg("tool", "{\"temperature\": 21}"), msg("user", "Thanks")],
}

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the weather at a place, e.g. \"Paris, France\".",
        "parameters": {
            "type": "object",
            "properties": {"location": {"type": "string", "description": "City, Country"},
                           "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["location"],
        },
        "return": {"type": "number", "description": "°C or °F"},
    },
}

EXTRAS = {
    "none": {},
    "date": {"date_string": "21 Nov 2025"},
    "tools": {"tools": [WEATHER_TOOL]},
    "no_think": {"enable_thinking": False},
    "think": {"enable_thinking": True},
}


def template_cases():
    cases = []
    names = sorted(f[:-len(".jinja")] for f in os.listdir(DATA) if f.endswith(".jinja"))
    for name in names:
        with open(os.path.join(DATA, name + ".jinja"), encoding="utf-8", newline="") as f:
            source = f.read()
        bos, eos = TOKENS[name]
        extras = ["none"]
        if name == "llama3.1":
            extras += ["date", "tools"]
        if name == "falcon3":
            extras += ["tools"]
        if name == "qwen3":
            extras += ["tools", "no_think", "think"]
        for conv_name, messages in CONVERSATIONS.items():
            for extra_name in extras:
                for agp in (True, False):
                    variables = {"messages": messages, "tools": None, "documents": None,
                                 "add_generation_prompt": agp, "bos_token": bos, "eos_token": eos}
                    variables.update(EXTRAS[extra_name])
                    case = {"template": name, "conversation": conv_name, "extra": EXTRAS[extra_name],
                            "messages": messages, "add_generation_prompt": agp,
                            "bos_token": bos, "eos_token": eos}
                    case.update(render(source, variables))
                    cases.append(case)
    return names, cases


# ----------------------------------------------------------------- snippets

# (template, variables): small templates, each pinning one behaviour.
SNIPPETS = [
    # text and whitespace control, trim_blocks, lstrip_blocks
    ("plain text", {}),
    ("trailing newline dropped\n", {}),
    ("two trailing newlines\n\n", {}),
    ("crlf\r\nline\rend\r\n", {}),
    ("a{{ x }}b", {"x": "X"}),
    ("[{{ missing }}]", {}),
    ("a {# comment #} b", {}),
    ("a\n  {# comment #}\nb", {}),
    ("{% if true %}\nx\n{% endif %}\ny", {}),
    ("a\n    {% if true %}\n    b\n    {% endif %}\nc", {}),
    ("  {% if true %}x{% endif %}", {}),
    ("a {% if true %}b{% endif %}", {}),
    ("a   {{- 'b' -}}   c  {%- if true -%}  d  {%- endif %} e", {}),
    ("{{ 'a' }}\n{{ 'b' }}\n", {}),
    ("{% if true +%}\nx{% endif %}", {}),
    ("a\n  {%+ if true %}x{% endif %}", {}),
    ("{%- if true %}\n  x  \n{%- endif %}\n  \n", {}),
    ("  {{ 'x' }}\n  {% if 1 %}y{% endif %}  \n  {#c#}  z", {}),
    ("\n {% raw %} {{ x }} {% endraw %}\nq", {}),
    ("x {%- raw -%}  a {{ b }} {%- endraw -%}  y", {}),
    ("{% for x in [1, 2] %}\n  {{ x }}\n{% endfor %}\n", {}),
    ("{%- for x in [1, 2] -%}\n  {{ x }}\n{%- endfor %}", {}),
    ("{#- c -#}\n  x", {}),
    ("line1\n{# c #}\n\n  {% set a = 1 %}\n{{ a }}", {}),
    ("\t{% if true %}\tx{% endif %}", {}),
    ("{{- 1 }}", {}),
    ("{% set x %}\n  block {{ 1 }}\n{% endset %}[{{ x }}]", {}),
    ("{% set x | upper %}abc{% endset %}{{ x }}", {}),
    ("{% generation %}gen {{ 1 }}{% endgeneration %}", {}),
    # literals and printing
    ("{{ none }} {{ None }} {{ true }} {{ False }} {{ 1 }} {{ -4 }} {{ 1.5 }} {{ 1e16 }} {{ 1e-5 }}", {}),
    ("{{ 0.1 + 0.2 }} {{ 1.0 }} {{ 2.5e-3 }} {{ 123456789.125 }} {{ 1e15 }} {{ 1_000 }} {{ 0x1F }} {{ 0b101 }}", {}),
    ("{{ 'a' 'b' }}|{{ \"it's\" }}|{{ 'a\\nb\\t\\\"c\\\"' }}|{{ '\\x41\\u00e9\\U0001F600\\q' }}", {}),
    ("{{ [1, 'a', none, true, 1.5] }}{{ (1, 2) }}{{ (1,) }}{{ () }}{{ {'a': 1, 'b': [2]} }}", {}),
    ("{{ ['it\\'s', \"q\\\"\", 'b\\\\s', 'nl\\n', 'é'] }}", {}),
    ("{{ [x] }} {{ x }}", {"x": "\u00a0\x01"}),
    # operators
    ("{{ 1 + 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 4 / 2 }} {{ 2 ** 10 }}", {}),
    ("{{ 2 ** 3 ** 2 }} {{ 2 * 3 - 1 }} {{ -2 ** 2 }} {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }}", {}),
    ("{{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 1 + 1.5 }} {{ true + true }} {{ 3 * 'ab' }} {{ [1] * 2 }}", {}),
    ("{{ 'a' ~ 1 ~ none ~ true ~ missing ~ [1] }}", {}),
    ("{{ 'a' + 'b' }} {{ [1] + [2] }}", {}),
    ("{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 == 1.0 }} {{ (1, 2) == [1, 2] }} {{ 'b' > 'a' }} {{ 1 != 2 }}", {}),
    ("{{ 3 in [1, 2] }} {{ 'a' not in 'abc' }} {{ 'k' in {'k': 1} }} {{ 1 in missing }} {{ 2 not in [1] }}", {}),
    ("{{ true and 'x' }} {{ '' or 'y' }} {{ 0 and 1 }} {{ none or 0 }} {{ not 1 }} {{ not '' }}", {}),
    ("{{ 'yes' if flag else 'no' }}|{{ 'a' if false }}|{{ 'a' if false else 'b' if true else 'c' }}", {"flag": 1}),
    ("{{ not x is defined }} {{ -2 | abs }} {{ -x | abs }}", {"x": 3}),
    ("{{ 'a' + 1 }}", {}),
    ("{{ 1 / 0 }}", {}),
    ("{{ missing + 1 }}", {}),
    ("{{ 1 < 'a' }}", {}),
    ("{{ 1 in 'abc' }}", {}),
    # variables, attributes, items, slices
    ("{{ d.a }} {{ d['a'] }} {{ d.missing }} {{ d['b'][1] }} {{ d.b.0 }} {{ l[-1] }} {{ l[5] }}", {"d": {"a": 1, "b": [2, 3]}, "l": [1, 2]}),
    ("{{ s[0] }}{{ s[-1] }}{{ s[1:3] }}{{ s[::-1] }}{{ s[10] }}|{{ l[1:] }}{{ l[:-1] }}{{ l[::2] }}{{ l[5:] }}", {"s": "héllo", "l": [1, 2, 3]}),
    ("{{ missing.attr }}", {}),
    ("{{ missing['x'] }}", {}),
    ("{{ d.items is callable }}{{ d.keys() | list }}{{ d.values() | list }}{{ d.get('a') }}{{ d.get('z', 0) }}", {"d": {"a": 1}}),
    ("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {"d": {"x": 1, "y": "z"}}),
    ("{{ [1, 2].append }}|{{ none.x }}|{{ (1).y }}", {}),
    ("{{ [1, 2].append(3) }}", {}),
    ("{{ 'abc'[0:5:0] }}", {}),
    # statements
    ("{% for n in [1, 2, 3] %}{% if n == 1 %}one{% elif n == 2 %}two{% else %}many{% endif %},{% endfor %}", {}),
    ("{% for x in items %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}"
     "{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.previtem }}{{ loop.nextitem }}{{ loop.cycle('a', 'b') }};{% endfor %}",
     {"items": ["p", "q", "r"]}),
    ("{% for x in [] %}a{% else %}empty{% endfor %}{% for x in [1] %}a{% else %}empty{% endfor %}", {}),
    ("{% for n in [1, 2, 3, 4] %}{% if n == 2 %}{% continue %}{% endif %}{% if n == 4 %}{% break %}{% endif %}{{ n }}{% endfor %}", {}),
    ("{% for m in ['a', 'b', 'c'] if m != 'b' %}{{ loop.index }}{{ m }}{{ loop.last }}{% endfor %}", {}),
    ("{% for a in [1, 2] %}{% for b in 'xy' %}{{ a }}{{ b }}{{ loop.index }}{% endfor %}{{ loop.index }}|{% endfor %}", {}),
    ("{% set a = 1 %}{% for x in [1] %}{% set a = 2 %}{{ a }}{% endfor %}{{ a }}{% if true %}{% set b = 3 %}{% endif %}{{ b }}", {}),
    ("{% for i in [1, 2] %}{% if i == 2 %}[{{ x }}]{% endif %}{% set x = i %}{% endfor %}", {"x": "outer"}),
    ("{% set x = 0 %}{% for i in [1, 2] %}{% set x = x + i %}{{ x }}{% endfor %}{{ x }}", {}),
    ("{% set ns = namespace(total=0, seen=false) %}{% for x in [1, 2, 3] %}{% set ns.total = ns.total + x %}"
     "{% if x == 2 %}{% set ns.seen = true %}{% endif %}{% endfor %}{{ ns.total }} {{ ns.seen }} {{ ns }}", {}),
    ("{% set ns = namespace() %}{% set ns.a = 'x' %}{{ ns.a }}{{ ns.b }}{{ ns['a'] }}", {}),
    ("{% set d = {'a': 1} %}{% set d.a = 2 %}{{ d.a }}", {}),
    ("{% set a, b = [1, 2] %}{{ a }}{{ b }}{% set c, d = 'xy' %}{{ c }}{{ d }}", {}),
    ("{% set a, b = [1, 2, 3] %}", {}),
    ("{% for x in 5 %}{% endfor %}", {}),
    ("{% set messages = messages[1:] %}{{ messages | length }}", {"messages": [1, 2, 3]}),
    ("{% for x in d %}{{ x }}{% endfor %}{% for c in 'hé' %}[{{ c }}]{% endfor %}", {"d": {"k1": 1, "k2": 2}}),
    ("{{ raise_exception('boom: ' ~ 42) }}", {}),
    ("{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(3, 0, -1) | list }}", {}),
    ("{{ range(200000) | length }}", {}),
    ("{{ namespace is defined }} {{ strftime_now is defined }} {{ raise_exception is defined }} {{ nothing is defined }}", {}),
    ("{{ dict(a=1, b='x') }} {{ namespace({'a': 1}).a }}", {}),
    # tests
    ("{{ x is defined }}{{ y is defined }}{{ y is not defined }}{{ y is undefined }}{{ n is none }}{{ s is string }}", {"x": 1, "n": None, "s": "s"}),
    ("{{ 1 is number }}{{ true is number }}{{ 1.5 is float }}{{ 1 is integer }}{{ true is integer }}{{ true is boolean }}"
     "{{ 1 is true }}{{ false is false }}", {}),
    ("{{ {} is mapping }}{{ [] is mapping }}{{ 's' is iterable }}{{ 1 is iterable }}{{ missing is iterable }}"
     "{{ 's' is sequence }}{{ range is callable }}{{ 's' is callable }}", {}),
    ("{{ 3 is odd }}{{ 4 is even }}{{ 6 is divisibleby 3 }}{{ 6 is divisibleby(4) }}{{ 'ab' is lower }}{{ 'AB' is upper }}"
     "{{ 'a1' is lower }}{{ '1' is lower }}", {}),
    ("{{ 1 is eq 1 }}{{ 1 is equalto 2 }}{{ 1 is ne 2 }}{{ 1 is lt 2 }}{{ 2 is le 2 }}{{ 3 is gt 2 }}{{ 2 is ge 3 }}"
     "{{ 2 is in [1, 2] }}{{ none is sameas none }}{{ 1 is sameas 1 }}", {}),
    ("{{ x is string and x.startswith('a') }} {{ x is not none }}", {"x": "abc"}),
    # filters
    ("{{ '  a b  ' | trim }}|{{ 'xxaxx' | trim('x') }}|{{ 5 | trim }}|{{ none | trim }}|{{ missing | trim }}", {}),
    ("{{ 'héllo wörld' | upper }} {{ 'ÀÉÎ ΣΑΣ ДА' | lower }} {{ 'ß' | upper }} {{ 'hELLO wORLD' | capitalize }}", {}),
    ("{{ \"hello world's-case (x) [y] <z>\" | title }} {{ \"hello world's\".title() }} {{ 'ab' | capitalize }}", {}),
    ("{{ 'abc' | length }} {{ 'héllo' | length }} {{ [1, 2] | count }} {{ {'a': 1} | length }} {{ missing | length }}", {}),
    ("{{ missing | default('d') }} {{ '' | default('d') }} {{ '' | default('d', true) }} {{ none | d('x') }}", {}),
    ("{{ [1, 2, 3] | join(', ') }} {{ ['a', 'b'] | join }} {{ users | join(', ', attribute='name') }}", {"users": [{"name": "x"}, {"name": "y"}]}),
    ("{{ [3, 1] | first }} {{ [3, 1] | last }} {{ 'abc' | first }} {{ 'abc' | last }} [{{ [] | first }}] {{ {'a': 1} | first }}", {}),
    ("{{ 'ab' | list }} {{ {'a': 1} | list }} {{ 1 | string }} {{ [1] | string }}", {}),
    ("{{ '42' | int }} {{ '4.7' | int }} {{ 'x' | int }} {{ 'x' | int(7) }} {{ 3.9 | int }} {{ '0x1A' | int(0, 16) }} {{ ' 12 ' | int }}", {}),
    ("{{ '1.5' | float }} {{ 'x' | float }} {{ 2 | float }} {{ -3 | abs }} {{ -2.5 | abs }}", {}),
    ("{{ d | items | list }} {{ d | dictsort }} {{ d | dictsort(reverse=true) }} {{ missing | items | list }}", {"d": {"b": 1, "a": 2}}),
    ("{{ [3, 1, 2] | sort }} {{ ['b', 'A', 'a'] | sort }} {{ ['b', 'A', 'a'] | sort(case_sensitive=true) }} "
     "{{ [3, 1, 2] | sort(reverse=true) }} {{ users | sort(attribute='age') | map(attribute='name') | list }}",
     {"users": [{"name": "x", "age": 30}, {"name": "y", "age": 20}]}),
    ("{{ [1, 2, 3] | sum }} {{ [1, 2] | sum(start=10) }} {{ ['x', 'Y'] | max }} {{ [3, 1] | min }} {{ [] | max }}", {}),
    ("{{ [1, 2, 3] | reverse | list }} {{ 'abc' | reverse }} {{ ['a', 'A', 'b'] | unique | list }}", {}),
    ("{{ 'aaa' | replace('a', 'b') }} {{ 'aaa' | replace('a', 'b', 2) }} {{ 'ab' | replace('', '-') }}", {}),
    ("{{ {'a': [1, 2], 'b': {'c': none, 'd': true}, 'e': 'é\"\\n\\u0001', 'f': 1.5} | tojson }}", {}),
    ("{{ {'b': 1, 'a': []} | tojson(indent=2) }}|{{ [1, [2, {}], {'x': [3]}] | tojson(indent=4) }}", {}),
    ("{{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }} {{ 'é' | tojson(ensure_ascii=true) }} {{ (1, 2) | tojson }}", {}),
    ("{{ [1, 2] | tojson(separators=(',', ':')) }} {{ 'x' | tojson }} {{ none | tojson }} {{ 1e100 | tojson }}", {}),
    ("{{ missing | tojson }}", {}),
    ("{{ msgs | selectattr('role', 'equalto', 'user') | list | length }} "
     "{{ (msgs | selectattr('role', 'equalto', 'user') | list)[-1].content }} "
     "{{ msgs | rejectattr('role', 'eq', 'user') | map(attribute='content') | join }}",
     {"msgs": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]}),
    ("{% for i in items | selectattr('on') %}{{ i.n }}{% endfor %} {{ [0, 1, 2, none] | select | list }} "
     "{{ [1, 2, 3, 4] | select('odd') | list }} {{ [1, 2, 3] | reject('lt', 2) | list }} {{ ['a', 'b'] | map('upper') | list }}",
     {"items": [{"n": 1, "on": True}, {"n": 2, "on": False}, {"n": 3}]}),
    ("{{ builtin | reject('equalto', 'code_interpreter') | join(', ') }}", {"builtin": ["brave_search", "code_interpreter", "wolfram"]}),
    ("{{ 'a\\nb\\n\\nc' | indent }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a\\n\\nb' | indent('> ', blank=true) }}", {}),
    ("{{ d | attr('items') is callable }} {{ d | attr('a') }}", {"d": {"a": 1}}),
    # string methods
    ("[{{ '  x  '.strip() }}][{{ '  x  '.lstrip() }}][{{ '  x  '.rstrip() }}][{{ 'xxyxx'.strip('x') }}][{{ '\\u3000x\\n'.strip() }}]", {}),
    ("{{ 'a b  c'.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a,b,c'.split(',', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ '  '.split() }}", {}),
    ("{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith('bc') }} {{ 'abc'.startswith(('x', 'a')) }} {{ 'abc'.endswith('x') }}", {}),
    ("{{ 'aBc'.upper() }} {{ 'aBc'.lower() }} {{ 'a-b c'.replace('-', '+') }} {{ 'abcabc'.find('c') }} {{ 'abc'.find('z') }}", {}),
    ("{{ 'a</think>b'.split('</think>')[-1] }} {{ '\\n\\nx'.lstrip('\\n') }} {{ ', '.join(['a', 'b']) }} {{ 'abab'.count('ab') }}", {}),
    ("{{ 'l1\\nl2\\r\\nl3'.splitlines() }} {{ '12'.isdigit() }} {{ 'ab'.isalpha() }} {{ 'hello world'.capitalize() }}", {}),
    ("{{ '%s and %d' % ('a', 2) }} {{ '%(k)s!' % d }} {{ 'x' % [] }} {{ '%r' % s }} {{ '%.%' if false }}{{ '100%%' % () }}", {"d": {"k": "v"}, "s": "q"}),
    ("{{ '%s %s' % ('a',) }}", {}),
    ("{{ 0 | select | list }} {{ none | map('upper') | list }} {{ '' | reject | list }}", {}),
    ("{{ missing | int }}", {}),
    ("{{ n[1:] }}", {"n": None}),
    ("{{ msgs | unique | list }}", {"msgs": [{"a": 1}]}),
    # syntax errors (jinja2 refuses these at parse time)
    ("{% if true %}unclosed", {}),
    ("{% for x in y %}{% endif %}", {}),
    ("{{ x | nosuchfilter }}", {}),
    ("{{ x is nosuchtest }}", {}),
    ("{{ 1 + }}", {}),
    ("{% nosuchtag %}", {}),
    ("{{ 'unterminated }}", {}),
    ("{{ (1, 2 }}", {}),
    ("{# unclosed comment", {}),
    ("{{ x }", {}),
]


def snippet_cases():
    out = []
    for source, variables in SNIPPETS:
        case = {"source": source, "vars": variables}
        case.update(render(source, variables))
        out.append(case)
    return out


def main():
    names, cases = template_cases()
    doc = {
        "comment": "Generated by tests/tools/render_chat_goldens.py with jinja2 " + jinja2.__version__ +
                   "; do not edit.",
        "templates": names,
        "cases": cases,
        "snippets": snippet_cases(),
    }
    path = os.path.join(DATA, "goldens.json")
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{path}: {len(cases)} template cases, {len(doc['snippets'])} snippets", file=sys.stderr)


if __name__ == "__main__":
    main()
