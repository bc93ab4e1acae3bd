-- attention.lua: the attention family, prefill (mma.sync path, Hopper wgmma path), packed
-- variable-length prefill and chunked prefill over longer keys (Hopper) and decode.
-- Each part is a recipe of its own (recipes/attention/*.lua); `tune run` tunes all.
return {
  require "attention.prefill",
  require "attention.prefill_sm90",
  require "attention.varlen",
  require "attention.varlen_kv",
  require "attention.decode",
}
