"""kube-apiserver's limits and their answers over HTTPS: body size, nesting depth, query numbers and
booleans, watch timeouts, unknown fields. Each answer is the one a real kube-apiserver 1.36 gives
(the interop tier's differential tests compare them with one)."""

from __future__ import annotations

import json

from kubelet_dra.workbench.testbed.serverthread import ServerThread

CONFIG_MAPS = "/api/v1/namespaces/default/configmaps"
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"


def config_map(name: str, **fields: object) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "1"}, **fields}


def post_raw(apiserver: ServerThread, path: str, body: bytes) -> tuple[int, dict]:
    return apiserver.json("POST", path, body=body, headers={"Content-Type": "application/json"})


def test_a_body_over_three_mebibytes_is_413_not_a_server_error(apiserver: ServerThread):
    code, answer = apiserver.json("POST", CONFIG_MAPS, body=config_map("big", data={"a": "x" * 3 * 1024 * 1024}))
    assert (code, answer["reason"], answer["message"]) == (
        413,
        "RequestEntityTooLarge",
        "Request entity too large: limit is 3145728",
    )
    assert apiserver.json("GET", f"{CONFIG_MAPS}/big")[0] == 404


def test_a_deep_body_is_decoded_like_go_does(apiserver: ServerThread):
    params = '{"a":' * 5000 + "1" + "}" * 5000
    claim = (
        '{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"deep"},"spec":{"devices":'
        '{"requests":[{"name":"r","exactly":{"deviceClassName":"c"}}],"config":[{"opaque":'
        f'{{"driver":"gpu.example.com","parameters":{params}}}}}]}}}}}}'
    )
    code, answer = post_raw(apiserver, CLAIMS, claim.encode())
    assert code == 422, answer
    assert answer["details"]["causes"] == [
        {
            "reason": "FieldValueTooLong",
            "message": "Too long: may not be more than 10240 bytes",
            "field": "spec.devices.config[0].opaque.parameters",
        }
    ]
    unknown = json.dumps(config_map("deep-unknown"))[:-1] + ', "x": ' + "[" * 5000 + "]" * 5000 + "}"
    code, created = post_raw(apiserver, CONFIG_MAPS, unknown.encode())
    assert code == 201, created
    assert "x" not in created and "x" not in apiserver.json("GET", f"{CONFIG_MAPS}/deep-unknown")[1]


def test_a_body_deeper_than_go_accepts_is_400(apiserver: ServerThread):
    """The whole document counts: 10,000 levels in all pass, one more is refused (measured on kube-apiserver)."""
    body = json.dumps(config_map("deeper"))[:-1] + ', "x": ' + "[" * 10_000 + "]" * 10_000 + "}"
    code, answer = post_raw(apiserver, CONFIG_MAPS, body.encode())
    assert (code, answer["reason"]) == (400, "BadRequest")
    assert "json parse error: invalid character '[' exceeded max depth" in answer["message"]
    shallow = json.dumps(config_map("shallow"))[:-1] + ', "x": ' + "[" * 9_999 + "]" * 9_999 + "}"
    assert post_raw(apiserver, CONFIG_MAPS, shallow.encode())[0] == 201


def test_query_numbers_are_read_like_strconv_parseint(apiserver: ServerThread):
    assert apiserver.json("GET", f"{CONFIG_MAPS}?limit=-1")[1]["kind"] == "ConfigMapList"
    for query, value, why in (
        ("limit=x", "x", "invalid syntax"),
        ("limit=1_0", "1_0", "invalid syntax"),
        ("limit=99999999999999999999", "99999999999999999999", "value out of range"),
    ):
        code, answer = apiserver.json("GET", f"{CONFIG_MAPS}?{query}")
        assert (code, answer["message"]) == (400, f'strconv.ParseInt: parsing "{value}": {why}'), query


def test_query_booleans_are_false_only_for_0_and_false(apiserver: ServerThread):
    for value in ("0", "false", "FALSE"):
        assert apiserver.json("GET", f"{CONFIG_MAPS}?watch={value}")[1]["kind"] == "ConfigMapList", value
    response = apiserver.request("GET", f"{CONFIG_MAPS}?watch=x&timeoutSeconds=1&labelSelector=none%3D1")
    assert response.status == 200 and response.data == b"", "watch=x is a watch (it ends empty after 1 s)"


def test_a_negative_watch_timeout_ends_the_watch_with_a_deadline_error(apiserver: ServerThread):
    response = apiserver.request("GET", f"{CONFIG_MAPS}?watch=1&timeoutSeconds=-1")
    assert response.status == 200
    assert [json.loads(line) for line in response.data.splitlines()] == [
        {
            "type": "ERROR",
            "object": {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": "context deadline exceeded",
                "reason": "InternalError",
                "code": 500,
            },
        }
    ]


def test_label_limits_count_bytes_and_names_count_characters(apiserver: ServerThread):
    code, answer = apiserver.json(
        "POST", CONFIG_MAPS, body={**config_map("labels"), "metadata": {"name": "labels", "labels": {"k": "v" * 64}}}
    )
    assert code == 422 and answer["message"].endswith("must be no more than 63 bytes"), answer
    code, answer = apiserver.json("POST", CONFIG_MAPS, body=config_map("n" * 254))
    assert code == 422 and answer["message"].endswith("must be no more than 253 characters"), answer
    code, answer = apiserver.json("POST", CONFIG_MAPS, body=config_map("keys", data={"k" * 254: "v"}))
    assert code == 422 and answer["details"]["causes"][0]["field"] == f"data[{'k' * 254}]", answer


def test_yaml_escaped_surrogates_are_mended_like_go_does(apiserver: ServerThread):
    """Found by fuzzing: YAML decodes an escaped surrogate pair (as JSON encoders write U+10000) into two lone
    surrogates, which no UTF-8 answer can carry; the pair becomes its character and a lone one U+FFFD."""
    body = (
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: astral}\ndata: {pair: "\\ud800\\udc00", lone: "\\udc80"}\n'
    )
    response = apiserver.request("POST", CONFIG_MAPS, body=body.encode(), headers={"Content-Type": "application/yaml"})
    assert response.status == 201, response.data
    assert json.loads(response.data)["data"] == {"pair": "\U00010000", "lone": "\ufffd"}
    apply = apiserver.request(
        "PATCH",
        f"{CONFIG_MAPS}/astral?fieldManager=t&force=true",
        body=b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "astral"},'
        b' "data": {"pair": "\\ud800\\udc01"}}',
        headers={"Content-Type": "application/apply-patch+yaml"},
    )
    assert apply.status == 200, apply.data
    assert json.loads(apply.data)["data"]["pair"] == "\U00010001"


def nested_aliases(levels: int, indent: str = "") -> str:
    """A few hundred bytes whose aliases expand 9× per level (the YAML of CVE-2019-11253)."""
    lines = [f'{indent}a0: &a0 "lol"']
    lines += [f"{indent}a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 9)}]" for n in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def test_yaml_aliases_that_expand_a_body_are_400_as_go_yaml_refuses_them(apiserver: ServerThread):
    """go-yaml stops a decode that is mostly alias expansion, and an anchor holding itself, before anything grows."""
    bomb = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: laughs}\nanchors:\n" + nested_aliases(7, indent="  ")
    itself = "apiVersion: v1\nkind: ConfigMap\nmetadata: &m {name: itself, labels: *m}\n"
    for body, error in ((bomb, "document contains excessive aliasing"), (itself, "anchor 'm' value contains itself")):
        for method, path, content_type in (
            ("POST", CONFIG_MAPS, "application/yaml"),
            ("PATCH", f"{CONFIG_MAPS}/laughs?fieldManager=t", "application/apply-patch+yaml"),
        ):
            response = apiserver.request(method, path, body=body.encode(), headers={"Content-Type": content_type})
            answer = json.loads(response.data)
            assert (response.status, answer["kind"], answer["reason"]) == (400, "Status", "BadRequest"), answer
            assert f"yaml: {error}" in answer["message"], answer
    few = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: few}\ndata: {a: &v x, b: *v}\n"
    response = apiserver.request("POST", CONFIG_MAPS, body=few.encode(), headers={"Content-Type": "application/yaml"})
    assert response.status == 201 and json.loads(response.data)["data"] == {"a": "x", "b": "x"}, response.data


def test_a_yaml_body_nested_deeper_than_libyaml_accepts_is_400_at_once(apiserver: ServerThread):
    """PyYAML reads nested flow collections in time growing with the square of the depth: 50,000 levels held the
    server for longer than a client waits."""
    for depth, code in ((999, 201), (50_000, 400)):
        body = f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: deep-{depth}}}\nx: {'[' * depth}{']' * depth}\n"
        response = apiserver.request(
            "POST", CONFIG_MAPS, body=body.encode(), headers={"Content-Type": "application/yaml"}
        )
        assert response.status == code, response.data[:300]
    assert "yaml: exceeded max depth of 1000" in json.loads(response.data)["message"]
