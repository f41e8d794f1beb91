%% fibra_bench: the Erlang/OTP peers of fibra's benchmark suite.
%%
%% Built and run by fibra-bench/src/peers/erlang.rs:
%%
%%   erlc -o <dir> fibra_bench.erl
%%   erl +P 1048576 -noinput -pa <dir> -run fibra_bench main <workload> name=value... runs=N
%%
%% Each workload does one warm-up run and N timed runs and prints one JSON
%% line per run: {"warmup":true,"seconds":0.0123,"result":499999500000}.
%% The harness checks every result. Every run happens in a fresh runner
%% process that links the long-lived processes it starts, so a crash ends
%% the run (and the program, with exit status 1) instead of hanging it.
%%
%% Erlang has processes and asynchronous mailboxes, not rendezvous
%% channels. Where a workload relies on a send waiting for its receiver
%% (chain, fan-out), the rendezvous is emulated: the receiver answers every
%% message it takes with an ack (chain), or asks for every value it takes
%% (fan-out), so each hop costs two messages. Ping-pong needs no emulation:
%% each ping already waits for its pong.
-module(fibra_bench).
-export([main/1]).

main([Workload | Args]) ->
    Status =
        try
            Params = [parse_param(A) || A <- Args],
            Runs = param(runs, Params),
            Run = workload(Workload, Params),
            measure(Runs, Run),
            0
        catch
            Class:Reason:Stack ->
                io:format(standard_error, "fibra_bench ~s: ~p:~p~n~p~n",
                          [Workload, Class, Reason, Stack]),
                1
        end,
    halt(Status);
main([]) ->
    io:format(standard_error,
              "usage: fibra_bench <workload> name=value... runs=N~n", []),
    halt(2).

%% "pairs=10" -> {pairs, 10}
parse_param(Arg) ->
    [Name, Value] = string:split(Arg, "="),
    {list_to_atom(Name), list_to_integer(Value)}.

param(Name, Params) ->
    case lists:keyfind(Name, 1, Params) of
        {Name, Value} -> Value;
        false -> error({missing_parameter, Name})
    end.

%% The run of each workload: a fun that does the work once and returns its
%% result (every workload's parameters are those of the Rust rows).
workload("ping-pong", Params) ->
    Pairs = param(pairs, Params),
    RoundTrips = param(round_trips, Params),
    fun() -> ping_pong(Pairs, RoundTrips) end;
workload("chain", Params) ->
    Links = param(links, Params),
    Messages = param(messages, Params),
    fun() -> chain(Links, Messages) end;
workload("fan-out", Params) ->
    Consumers = param(consumers, Params),
    Messages = param(messages, Params),
    fun() -> fan_out(Consumers, Messages) end;
workload("spawn-join", Params) ->
    Tasks = param(tasks, Params),
    fun() -> spawn_join(Tasks) end;
workload("asymmetric-mailbox", Params) ->
    N = param(iterations, Params),
    fun() -> asymmetric_mailbox(N) end;
workload("symmetric-mailbox", Params) ->
    N = param(iterations, Params),
    fun() -> symmetric_mailbox(N) end;
workload("switch-baseline", Params) ->
    N = param(iterations, Params),
    fun() -> switch_baseline(N) end;
workload("par-fib", Params) ->
    N = param(n, Params),
    fun() -> par_fib(N) end;
workload("par-tak", Params) ->
    X = param(x, Params),
    Y = param(y, Params),
    Z = param(z, Params),
    fun() -> par_tak(X, Y, Z) end;
workload(Name, _) ->
    error({unknown_workload, Name}).

%% One warm-up run, then Runs timed runs, one JSON line each.
measure(Runs, Run) ->
    lists:foreach(
      fun(I) ->
              {Seconds, Result} = run_once(Run),
              io:format("{\"warmup\":~s,\"seconds\":~.9f,\"result\":~B}~n",
                        [I =:= 0, Seconds, Result])
      end,
      lists:seq(0, Runs)).

%% Runs Run in a fresh runner process, timed there; the runner's links make
%% any crash of the run's processes a crash of the runner, reported here.
run_once(Run) ->
    Main = self(),
    {Runner, Ref} =
        spawn_monitor(
          fun() ->
                  Start = erlang:monotonic_time(),
                  Result = Run(),
                  Elapsed = erlang:monotonic_time() - Start,
                  Ns = erlang:convert_time_unit(Elapsed, native, nanosecond),
                  Main ! {self(), Ns / 1.0e9, Result}
          end),
    receive
        {Runner, Seconds, Result} ->
            receive {'DOWN', Ref, process, Runner, _} -> ok end,
            {Seconds, Result};
        {'DOWN', Ref, process, Runner, Reason} ->
            error({run_failed, Reason})
    end.

%% ping-pong: Pairs pairs; each pinger sends I for I in 0..RoundTrips-1 and
%% waits for the ponger's reply I+1. Result: the sum of all replies.
ping_pong(Pairs, RoundTrips) ->
    Self = self(),
    Pingers = [spawn_link(fun() ->
                                  Ponger = spawn_link(fun ponger/0),
                                  Self ! {self(), pinger(Ponger, 0, RoundTrips, 0)}
                          end)
               || _ <- lists:seq(1, Pairs)],
    lists:sum([receive {Pinger, Sum} -> Sum end || Pinger <- Pingers]).

pinger(Ponger, I, RoundTrips, Sum) when I < RoundTrips ->
    Ponger ! {ping, self(), I},
    receive
        {pong, V} -> pinger(Ponger, I + 1, RoundTrips, Sum + V)
    end;
pinger(Ponger, _, _, Sum) ->
    Ponger ! stop,
    Sum.

ponger() ->
    receive
        {ping, From, V} ->
            From ! {pong, V + 1},
            ponger();
        stop ->
            ok
    end.

%% A rendezvous send: To acks every message it takes.
send(To, V) ->
    To ! {msg, self(), V},
    receive ack -> ok end.

%% chain: a sender process sends 0..Messages-1 through Links relay
%% processes to the runner, which sums them; `done` closes the chain.
chain(Links, Messages) ->
    Last = self(),
    First = lists:foldl(fun(_, Next) -> spawn_link(fun() -> relay(Next) end) end,
                        Last, lists:seq(1, Links)),
    spawn_link(fun() -> chain_send(First, 0, Messages) end),
    chain_sum(0).

chain_send(To, I, Messages) when I < Messages ->
    send(To, I),
    chain_send(To, I + 1, Messages);
chain_send(To, _, _) ->
    To ! done.

relay(Next) ->
    receive
        {msg, From, V} ->
            From ! ack,
            send(Next, V),
            relay(Next);
        done ->
            Next ! done
    end.

chain_sum(Sum) ->
    receive
        {msg, From, V} ->
            From ! ack,
            chain_sum(Sum + V);
        done ->
            Sum
    end.

%% fan-out: Consumers processes compete for the values 0..Messages-1 of one
%% producer: each asks for a value ({ready, Pid}) and the producer hands the
%% next one to whoever asked; when the values run out it answers `done`.
%% Each consumer reports its sum; result: the total.
fan_out(Consumers, Messages) ->
    Self = self(),
    Producer = spawn_link(fun() -> produce(0, Messages, Consumers) end),
    [spawn_link(fun() -> Self ! {sum, consume(Producer, 0)} end)
     || _ <- lists:seq(1, Consumers)],
    lists:sum([receive {sum, Sum} -> Sum end || _ <- lists:seq(1, Consumers)]).

produce(I, Messages, Consumers) when I < Messages ->
    receive {ready, Consumer} -> Consumer ! {value, I} end,
    produce(I + 1, Messages, Consumers);
produce(_, _, 0) ->
    ok;
produce(I, Messages, Consumers) ->
    receive {ready, Consumer} -> Consumer ! done end,
    produce(I, Messages, Consumers - 1).

consume(Producer, Sum) ->
    Producer ! {ready, self()},
    receive
        {value, V} -> consume(Producer, Sum + V);
        done -> Sum
    end.

%% spawn-join: the runner starts Tasks processes (process I sends I back and
%% ends) and joins them by receiving their values, in any order: Erlang has
%% no join handle. Result: the sum. These processes are not linked (a link
%% doubles the cost of a spawn here, and they cannot fail).
spawn_join(Tasks) ->
    Self = self(),
    spawn_all(Self, 0, Tasks),
    join_all(Tasks, 0).

spawn_all(Self, I, Tasks) when I < Tasks ->
    spawn(fun() -> Self ! {joined, I} end),
    spawn_all(Self, I + 1, Tasks);
spawn_all(_, _, _) ->
    ok.

join_all(0, Sum) ->
    Sum;
join_all(N, Sum) ->
    receive {joined, V} -> join_all(N - 1, Sum + V) end.

%% The `racket` group (Racket's mbox-test.ss): the workloads that fit
%% Erlang, whose processes have mailboxes but no semaphores or channels.

%% asymmetric-mailbox: a producer process sends 0..N-1 to a consumer
%% process, which receives N messages and sums them. Result: the sum.
asymmetric_mailbox(N) ->
    Self = self(),
    Consumer = spawn_link(fun() -> Self ! {sum, receive_sum(N, 0)} end),
    spawn_link(fun() -> send_all(Consumer, 0, N) end),
    receive {sum, Sum} -> Sum end.

send_all(To, I, N) when I < N ->
    To ! I,
    send_all(To, I + 1, N);
send_all(_, _, _) ->
    ok.

receive_sum(0, Sum) ->
    Sum;
receive_sum(N, Sum) ->
    receive V -> receive_sum(N - 1, Sum + V) end.

%% symmetric-mailbox: the initiator sends I for I in 0..N-1 to its peer
%% and waits for the reply I+1; the peer knows the initiator (as in
%% mbox-test.ss, messages carry no sender). Result: the sum of the replies.
symmetric_mailbox(N) ->
    Self = self(),
    spawn_link(fun() ->
                       Initiator = self(),
                       Peer = spawn_link(fun() -> reply(Initiator, N) end),
                       Self ! {sum, initiate(Peer, 0, N, 0)}
               end),
    receive {sum, Sum} -> Sum end.

initiate(Peer, I, N, Sum) when I < N ->
    Peer ! I,
    receive V -> initiate(Peer, I + 1, N, Sum + V) end;
initiate(_, _, _, Sum) ->
    Sum.

reply(_, 0) ->
    ok;
reply(To, N) ->
    receive V -> To ! V + 1 end,
    reply(To, N - 1).

%% switch-baseline: two processes each call erlang:yield() N times and
%% report how many times they did. Result: 2N.
switch_baseline(N) ->
    Self = self(),
    [spawn_link(fun() -> Self ! {yields, yield_times(N, 0)} end) || _ <- [1, 2]],
    lists:sum([receive {yields, Count} -> Count end || _ <- [1, 2]]).

yield_times(0, Count) ->
    Count;
yield_times(N, Count) ->
    erlang:yield(),
    yield_times(N - 1, Count + 1).

%% par-fib: fib(N) with a process per call; a call with N >= 2 spawns the
%% calls for N-1 and N-2, which reply to its mailbox, and sends the sum to
%% its parent. Result: fib(N).
par_fib(N) ->
    Self = self(),
    spawn_link(fun() -> fib_call(N, Self) end),
    receive {fib, V} -> V end.

fib_call(N, Parent) when N < 2 ->
    Parent ! {fib, N};
fib_call(N, Parent) ->
    Self = self(),
    spawn_link(fun() -> fib_call(N - 1, Self) end),
    spawn_link(fun() -> fib_call(N - 2, Self) end),
    receive {fib, A} -> receive {fib, B} -> Parent ! {fib, A + B} end end.

%% par-tak: tak(X, Y, Z) with a process per call; a call with Y < X spawns
%% the three inner calls, which reply to its mailbox tagged with their
%% position, then spawns the outer call, which replies to its parent.
%% Result: the value.
par_tak(X, Y, Z) ->
    Self = self(),
    spawn_link(fun() -> tak_call(X, Y, Z, Self, 0) end),
    receive {tak, 0, V} -> V end.

tak_call(X, Y, Z, Parent, Position) when Y < X ->
    Self = self(),
    spawn_link(fun() -> tak_call(X - 1, Y, Z, Self, 0) end),
    spawn_link(fun() -> tak_call(Y - 1, Z, X, Self, 1) end),
    spawn_link(fun() -> tak_call(Z - 1, X, Y, Self, 2) end),
    A = receive {tak, 0, VA} -> VA end,
    B = receive {tak, 1, VB} -> VB end,
    C = receive {tak, 2, VC} -> VC end,
    spawn_link(fun() -> tak_call(A, B, C, Parent, Position) end);
tak_call(_, _, Z, Parent, Position) ->
    Parent ! {tak, Position, Z}.
