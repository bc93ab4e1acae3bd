-- attention.lua: the attention family, prefill and decode.
-- Each part is a recipe of its own (recipes/attention/*.lua); `tune run` tunes both.
return {
  require "attention.prefill",
  require "attention.decode",
}
