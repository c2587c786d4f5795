// A minimal NVTX tool for the tests: loaded by NVTX through NVTX_INJECTION64_PATH, it writes every
// range push and pop, with its domain, to the file named by MLAPLAN_NVTX_LOG, one per line:
//   push<TAB>domain<TAB>name      pop<TAB>domain
// The default domain is written as "(default)". Lines are flushed at once: the program may exit().
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace {

std::FILE* g_log = nullptr;
std::mutex g_mutex;

struct Domain {
  std::string name;
};

const char* domain_name(nvtxDomainHandle_t domain) {
  return domain ? reinterpret_cast<const Domain*>(domain)->name.c_str() : "(default)";
}

const char* message_of(const nvtxEventAttributes_t* a) {
  if (a && a->messageType == NVTX_MESSAGE_TYPE_ASCII && a->message.ascii) return a->message.ascii;
  return "(non-ASCII message)";
}

void write(const char* what, const char* domain, const char* name) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_log) return;
  if (name)
    std::fprintf(g_log, "%s\t%s\t%s\n", what, domain, name);
  else
    std::fprintf(g_log, "%s\t%s\n", what, domain);
  std::fflush(g_log);
}

nvtxDomainHandle_t NVTX_API domain_create(const char* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(new Domain{name ? name : ""});  // lives as long as the process
}
int NVTX_API domain_push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  write("push", domain_name(domain), message_of(attributes));
  return 0;
}
int NVTX_API domain_pop(nvtxDomainHandle_t domain) {
  write("pop", domain_name(domain), nullptr);
  return 0;
}
int NVTX_API push_ascii(const char* message) {
  write("push", "(default)", message ? message : "");
  return 0;
}
int NVTX_API push_ex(const nvtxEventAttributes_t* attributes) {
  write("push", "(default)", message_of(attributes));
  return 0;
}
int NVTX_API pop_default() {
  write("pop", "(default)", nullptr);
  return 0;
}

bool hook(const NvtxExportTableCallbacks* callbacks, NvtxCallbackModule module, unsigned index, NvtxFunctionPointer fn) {
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!callbacks->GetModuleFunctionTable(module, &table, &size) || !table || index >= size) return false;
  *table[index] = fn;
  return true;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table) {
  const char* path = std::getenv("MLAPLAN_NVTX_LOG");
  if (!path || !get_table) return 0;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_table(NVTX_ETID_CALLBACKS));
  if (!callbacks) return 0;
  g_log = std::fopen(path, "a");
  if (!g_log) return 0;
  const bool ok = hook(callbacks, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainCreateA, reinterpret_cast<NvtxFunctionPointer>(&domain_create)) &&
                  hook(callbacks, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePushEx, reinterpret_cast<NvtxFunctionPointer>(&domain_push)) &&
                  hook(callbacks, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePop, reinterpret_cast<NvtxFunctionPointer>(&domain_pop)) &&
                  hook(callbacks, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushA, reinterpret_cast<NvtxFunctionPointer>(&push_ascii)) &&
                  hook(callbacks, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushEx, reinterpret_cast<NvtxFunctionPointer>(&push_ex)) &&
                  hook(callbacks, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePop, reinterpret_cast<NvtxFunctionPointer>(&pop_default));
  return ok ? 1 : 0;  // 0 tells NVTX to fall back to no-ops
}
