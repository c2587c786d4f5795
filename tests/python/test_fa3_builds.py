"""Which FlashAttention-3 build the executor takes (fa3.py), on the CPU with made-up modules: the
order of the candidates, fa3-fwd's missing config module aliased, the LSE read in the executor's
layout, and what auto and fa3 resolve to where FA3 cannot run."""
import sys
import types

import pytest

torch = pytest.importorskip("torch", reason="the prefill executor needs torch (pip install .[torch])")

from mlaplan.prefill import fa3  # noqa: E402
from mlaplan.prefill.attention import KERNELS, kernel_title, resolve_kernel  # noqa: E402

FA3_MODULES = ("flash_attn_interface", "fa3_fwd_config", "fa3_fwd_interface", "flash_attn_config", "vllm",
               "vllm.vllm_flash_attn", "sgl_kernel", "sgl_kernel.flash_attn")


@pytest.fixture
def modules(monkeypatch):
    """sys.modules with no FA3 build in it (None makes an import fail), restored afterwards."""
    for name in FA3_MODULES:
        monkeypatch.setitem(sys.modules, name, None)
    fa3.reset()
    yield sys.modules
    fa3.reset()


def fake(calls, layout="heads"):
    def varlen(q, k, v, *args, **kwargs):
        calls.append(kwargs)
        n, h = q.shape[0], q.shape[1]
        lse = torch.zeros(h, n) if layout == "heads" else torch.zeros(n, h)
        return torch.zeros(n, h, v.shape[-1]), lse, "extra"
    return varlen


def test_none_imports_says_why_and_names_the_wheel(modules):
    build, why = fa3.find()
    assert build is None
    assert "flash_attn_interface" in why and "fa3_fwd" in why and "pip install fa3-fwd" in why


def test_fa3_fwd_is_taken_with_its_config_aliased(modules, monkeypatch):
    calls = []
    config = types.ModuleType("fa3_fwd_config")
    interface = types.ModuleType("fa3_fwd_interface")

    def varlen(*a, **kw):  # fa3-fwd imports flash_attn_config when it runs: it must be there by then
        assert sys.modules["flash_attn_config"] is config
        return fake(calls)(*a, **kw)
    interface.flash_attn_varlen_func = varlen
    monkeypatch.setitem(sys.modules, "fa3_fwd_config", config)
    monkeypatch.setitem(sys.modules, "fa3_fwd_interface", interface)
    monkeypatch.delitem(sys.modules, "flash_attn_config")
    build, why = fa3.find()
    assert build is not None and build.module == "fa3_fwd_interface" and why == ""
    q, k, v = torch.zeros(7, 16, 192), torch.zeros(9, 16, 192), torch.zeros(9, 16, 128)
    out, lse = fa3.attention(build, q, k, v, None, None, 7, 9, 0.1, True)
    assert out.shape == (7, 16, 128) and lse.shape == (16, 7) and lse.dtype == torch.float32
    assert calls == [{"softmax_scale": 0.1, "causal": True, "return_attn_probs": True}]


def test_flash_attentions_own_build_comes_first(modules, monkeypatch):
    for name, func in (("flash_attn_interface", fake([])), ("sgl_kernel.flash_attn", fake([]))):
        m = types.ModuleType(name)
        m.flash_attn_varlen_func = func
        monkeypatch.setitem(sys.modules, name, m)
    build, _ = fa3.find()
    assert build.module == "flash_attn_interface"


def test_an_engines_build_with_tokens_major_lse(modules, monkeypatch):
    calls = []
    m = types.ModuleType("sgl_kernel.flash_attn")
    m.flash_attn_varlen_func = fake(calls, layout="tokens")
    monkeypatch.setitem(sys.modules, "sgl_kernel.flash_attn", m)
    monkeypatch.setitem(sys.modules, "sgl_kernel", types.ModuleType("sgl_kernel"))
    build, _ = fa3.find()
    assert build.module == "sgl_kernel.flash_attn"
    out, lse = fa3.attention(build, torch.zeros(5, 16, 192), torch.zeros(3, 16, 192), torch.zeros(3, 16, 128),
                             None, None, 5, 3, 0.1, False)
    assert lse.shape == (16, 5) and calls[0]["return_softmax_lse"] is True


def test_auto_on_the_cpu_is_atens_kernel_and_fa3_is_refused():
    assert KERNELS[0] == "auto"
    assert resolve_kernel("auto", "cpu") == ("flash", None)
    with pytest.raises(ValueError, match="FlashAttention-3 runs on SM90"):
        resolve_kernel("fa3", "cpu")
    with pytest.raises(ValueError, match="unknown kernel"):
        resolve_kernel("fa4", "cpu")
    assert kernel_title("flash").startswith("flash (FlashAttention-2")
