# SPDX-License-Identifier: MIT
# Checks `faultline show --json` of test_cli's sample report: the documented shape and values.
# usage: check_cli_json.py OUT.json BUILD_ID_HEX full|truncated
import json
import re
import sys

path, build_id, mode = sys.argv[1:4]
with open(path, encoding="utf-8") as f:
    doc = json.load(f)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


HEX = re.compile(r"^0x[0-9a-f]+$")


def is_hex(v):
    return isinstance(v, str) and HEX.match(v) is not None


top = {"report_id", "truncated", "complete", "process", "time", "os", "arch", "signal",
       "crashed_tid", "interrupted_signal", "abort_message", "terminate", "annotations",
       "threads_total", "threads", "images", "notes", "hang"}
check(top <= set(doc), f"top-level keys missing: {top - set(doc)}")
check(doc["report_id"] == "00112233445566778899aabbccddeeff", "report_id")
check(doc["hang"] is None, "a crash report has no hang")
check(doc["process"] == {"pid": 4242, "path": "/opt/sample/bin/sample-app",
                         "app_name": "sample-app", "app_version": "1.2.3 (45)",
                         "start_time": "2024-05-01T11:59:00.123Z"}, f"process {doc['process']}")
check(doc["time"] == "2024-05-01T12:00:00.123Z", "time")
check(doc["os"]["name"] == "Linux" and doc["os"]["release"] == "6.1.0-18-amd64", "os")
check(doc["arch"] in ("x86_64", "arm64"), "arch")
check(doc["signal"] == {"number": 11, "name": "SIGSEGV", "code": 1, "code_name": "SEGV_MAPERR",
                        "address": "0x10", "sender_pid": None}, f"signal {doc['signal']}")
check(doc["crashed_tid"] == 1001, "crashed_tid")
check(doc["interrupted_signal"] is None, "no interrupted signal in the sample")
check(doc["abort_message"] is None and doc["terminate"] is None,
      "no abort message nor C++ exception in the sample")
check(doc["threads_total"] == 5, f"threads_total {doc['threads_total']}")

if mode == "truncated":
    check(doc["truncated"] is True and doc["complete"] is False, "truncated flags")
    check(len(doc["threads"]) == 2 and doc["images"] == [] and doc["annotations"] == {}
          and doc["notes"] == [], "truncated content")
    # Without images nothing is symbolicated.
    check(all(f["image"] is None and f["symbol"] is None and f["offset"] is None
              for t in doc["threads"] for f in t["frames"]), "frames without images")
else:
    check(doc["truncated"] is False and doc["complete"] is True, "complete flags")
    check(len(doc["threads"]) == 3, "threads")
    check(len(doc["images"]) == 24, "images")
    check(doc["annotations"] == {"scenario": "sample", "build": "20240501.1",
                                 "tricky": 'q"b\\n\n\x01 caf\u00e9 bad\ufffd end'},
          f"annotations {doc['annotations']!r}")
    check(doc["notes"] == ["image list truncated at 20 images",
                           "memory maps truncated at 8192 mappings"], "notes")

for i, t in enumerate(doc["threads"]):
    check(set(t) == {"tid", "name", "crashed", "monitored", "state", "registers", "frames",
                     "frames_truncated", "frames_omitted", "frames_omitted_at",
                     "unwind_stop"}, f"thread keys {set(t)}")
    check(t["tid"] == 1001 + i and t["crashed"] == (i == 0) and t["state"] == "captured",
          f"thread {i}")
    check(len(t["registers"]) >= 17 and all(is_hex(v) for v in t["registers"].values()),
          f"thread {i} registers")
    check(t["frames_truncated"] == (i == 1), f"thread {i} frames_truncated")
    for fr in t["frames"]:
        check(set(fr) == {"pc", "sp", "method", "image", "symbol", "mangled", "offset", "file",
                          "line"}, "frame keys")
        # C names are their own link names; no symbol, no link name.
        check(fr["mangled"] == fr["symbol"], f"frame mangled {fr}")
        check((fr["file"] is None) == (fr["line"] is None), "frame file and line together")
        check(is_hex(fr["pc"]) and is_hex(fr["sp"]), "frame addresses")
        check(fr["method"] in ("cfi", "frame_pointer", "context", "link_register", "scan",
                               "unknown"), "frame method")
        check(fr["image"] is None or 0 <= fr["image"] < max(len(doc["images"]), 1), "frame image")

t0 = doc["threads"][0]["frames"]
check(len(t0) == 7, "crashed thread frames")
if mode == "full" and len(t0) == 7:
    check((t0[0]["image"], t0[0]["symbol"], t0[0]["offset"], t0[0]["method"]) ==
          (0, "fl_cli_target_a", 4, "context"), f"frame 0 {t0[0]}")
    check((t0[1]["image"], t0[1]["symbol"], t0[1]["offset"], t0[1]["method"]) ==
          (0, "fl_cli_target_b", 6, "cfi"), f"frame 1 {t0[1]}")
    check(t0[2]["symbol"] != "fl_cli_target_c" and t0[2]["method"] == "frame_pointer",
          f"frame 2 {t0[2]}")
    check((t0[3]["image"], t0[3]["symbol"], t0[3]["offset"]) == (1, None, None), f"frame 3 {t0[3]}")
    check((t0[4]["image"], t0[4]["symbol"], t0[4]["offset"]) == (2, "fl_cli_target_b", 6),
          f"frame 4 {t0[4]}")
    check((t0[5]["image"], t0[5]["symbol"], t0[5]["offset"]) == (3, "fl_cli_target_b", 6),
          f"frame 5 {t0[5]}")
    check(t0[6] == {"pc": "0x10", "sp": "0x7ffd00001180", "method": "scan", "image": None,
                    "symbol": None, "mangled": None, "offset": None, "file": None, "line": None},
          f"frame 6 {t0[6]}")

for i, img in enumerate(doc["images"]):
    check(set(img) == {"path", "build_id", "build_id_kind", "slide", "start", "end", "text_start",
                       "text_end", "is_main", "is_vdso", "path_truncated"}, "image keys")
    check(all(is_hex(img[k]) for k in ("slide", "start", "end", "text_start", "text_end")),
          "image addresses")
if mode == "full" and len(doc["images"]) == 24:
    imgs = doc["images"]
    check(imgs[0]["build_id"] == build_id and imgs[0]["build_id_kind"] == "gnu" and
          imgs[0]["is_main"] is True and imgs[0]["slide"] == "0x555500000000", "image 0")
    check(imgs[1]["build_id"] != build_id, "image 1 build-id")
    check(imgs[5]["path"] == "[vdso]" and imgs[5]["is_vdso"] is True, "vdso image")
    check(imgs[4 + 5]["build_id_kind"] == "text_hash" and len(imgs[4 + 5]["build_id"]) == 32,
          "text hash image")
    check(imgs[4 + 7]["build_id"] is None and imgs[4 + 7]["build_id_kind"] == "none",
          "image without build-id")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("json ok")
