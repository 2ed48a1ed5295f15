#!/usr/bin/env python3
"""A toy server launcher that embeds launch-resolver through its argparse integration.

    python examples/launch_server.py --model-path tests/fixtures/llama-config.json --platform h100
    python examples/launch_server.py --model-path ... --platform h100 --kv-cache-dtype fp8_e4m3 \\
        --enable-hisparse --dsa-decode-backend tilelang          # a conflict: exit 1 with the report

The launcher has flags of its own (one of them, --kv-cache-dtype, is also a resolver option and
is reused, not declared twice); the resolver adds the rest, resolves the parsed namespace and
writes the decisions back before the "server" starts.

What is written back (resolver/integrations/argparse.py has the whole contract): what a rule
decided (a default or an adjustment), a typed value in the resolution's spelling, and, into the
flags the resolver added, every resolved value.  None is never written, a launcher's own "unset"
(a default of None) is left for the launcher to fill, and on a conflict nothing is written.
Resolving the written-back namespace again changes nothing.  A real SGLang launcher embeds it
the same way, on SGLang's own parser:

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    add_resolver_arguments(parser)        # adds only --platform: SGLang declares every other flag
    args = parser.parse_args()
    resolve_namespace(parser, args)       # the model: --model-path, as SGLang reads it
    server_args = ServerArgs.from_cli_args(args)
"""
import argparse
import logging
import sys

from resolver.errors import ConflictError, ResolverError
from resolver.explain import Style, render_text
from resolver.integrations.argparse import add_resolver_arguments, resolve_namespace


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="launch_server", description="Start a (pretend) LLM server.")
    parser.add_argument("--model-path", required=True,
                        help="a config.json, a directory holding one, or a catalogued model id")
    parser.add_argument("--port", type=int, default=30000, help="port to listen on")
    parser.add_argument("--kv-cache-dtype", default="auto", help="the launcher's own KV-cache flag")
    add_resolver_arguments(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        resolve_namespace(parser, args)  # the model is --model-path's
    except ConflictError as exc:
        sys.stderr.write(render_text(exc.resolution, style=Style.for_stream(sys.stderr)))
        return 1
    except ResolverError as exc:
        sys.stderr.write(f"launch_server: {exc}\n")
        return 2
    print(f"starting server on port {args.port}: attention_backend={args.attention_backend} "
          f"kv_cache_dtype={args.kv_cache_dtype} page_size={args.page_size}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
