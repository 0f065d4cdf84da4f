"""The agent's server interceptors run each method inside a context of their own: the allowlist
(:mod:`agent.auth`) checks the caller before the method, the metrics (:mod:`agent.metrics`) time it and
count how it ended. This is what they share: the same method handler, its behaviour run inside
``around(method, context)``.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import grpc

Context = grpc.aio.ServicerContext[Any, Any]

_FACTORIES: tuple[tuple[str, Callable[..., Any]], ...] = (
    ("unary_unary", grpc.unary_unary_rpc_method_handler),
    ("unary_stream", grpc.unary_stream_rpc_method_handler),
    ("stream_unary", grpc.stream_unary_rpc_method_handler),
    ("stream_stream", grpc.stream_stream_rpc_method_handler),
)


class AroundInterceptor(grpc.aio.ServerInterceptor):
    """Runs every method's behaviour inside :meth:`around`, for the four kinds of methods, whether the
    behaviour returns its answer, writes it with context.write, or is an async generator."""

    def around(self, method: str, context: Context) -> AbstractAsyncContextManager[None]:
        """The context a call of ``method`` (``/package.Service/Method``) runs in."""
        raise NotImplementedError

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        method = handler_call_details.method
        found = [(getattr(handler, kind), factory) for kind, factory in _FACTORIES if getattr(handler, kind)]
        if not found:
            return handler
        behaviour, factory = found[0]

        if inspect.isasyncgenfunction(behaviour):

            async def generating(request: Any, context: Context) -> AsyncIterator[Any]:
                async with self.around(method, context):
                    async for response in behaviour(request, context):
                        yield response

            wrapped: Callable[..., Any] = generating
        else:

            async def answering(request: Any, context: Context) -> Any:
                async with self.around(method, context):
                    return await behaviour(request, context)

            wrapped = answering
        handled: grpc.RpcMethodHandler = factory(
            wrapped,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
        return handled
