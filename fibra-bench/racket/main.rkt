#lang racket/base
;; fibra-bench's Racket peers: threads and rendezvous channels
;; (`make-channel`: Racket's channels are Concurrent ML's).
;;
;; Compiled and run by fibra-bench/src/peers/racket.rs:
;;
;;   raco make main.rkt      (compiled files redirected to the target dir)
;;   racket main.rkt <workload> name=value... runs=N
;;
;; Each workload does one warm-up run and N timed runs and prints one JSON
;; line per run: {"warmup":true,"seconds":0.0123,"result":499999500000}.
;; The harness checks every result.
;;
;; Racket threads are green threads: they all run on one OS thread (places
;; and futures, Racket's parallelism, are not used). Racket channels cannot
;; be closed: where the other peers close a channel, these programs send
;; `eof` (once per receiver).

(define (usage)
  (eprintf "usage: racket main.rkt <workload> name=value... runs=N\n")
  (exit 2))

;; "pairs=10" -> (cons 'pairs 10)
(define (parse-param arg)
  (define m (regexp-match #rx"^([a-z_]+)=([0-9]+)$" arg))
  (unless m
    (error 'fibra-bench "bad parameter ~s (expected name=number)" arg))
  (cons (string->symbol (cadr m)) (string->number (caddr m))))

(define (param params name)
  (define p (assq name params))
  (unless p
    (error 'fibra-bench "missing parameter ~a" name))
  (cdr p))

;; One warm-up run, then `runs` timed runs, one JSON line each.
(define (measure runs run)
  (for ([i (in-range (add1 runs))])
    (define start (current-inexact-monotonic-milliseconds))
    (define result (run))
    (define seconds (/ (- (current-inexact-monotonic-milliseconds) start) 1000.0))
    (printf "{\"warmup\":~a,\"seconds\":~a,\"result\":~a}\n"
            (if (zero? i) "true" "false")
            (real->decimal-string* seconds)
            result)
    (flush-output)))

;; A flonum as a JSON number with 9 decimals.
(define (real->decimal-string* x)
  (define n (inexact->exact (round (* x 1e9))))
  (define s (number->string n))
  (define padded (string-append (make-string (max 0 (- 10 (string-length s))) #\0) s))
  (define k (- (string-length padded) 9))
  (string-append (substring padded 0 k) "." (substring padded k)))

;; ping-pong: `pairs` pairs of threads; each pinger puts i for i in
;; 0..round_trips-1 on `ping` and gets the ponger's reply i+1 from `pong`.
;; Result: the sum of all replies.
(define (ping-pong pairs round-trips)
  (define sums (make-channel))
  (for ([_ (in-range pairs)])
    (define ping (make-channel))
    (define pong (make-channel))
    (thread (lambda ()
              (let loop ()
                (define v (channel-get ping))
                (unless (eof-object? v)
                  (channel-put pong (add1 v))
                  (loop)))))
    (thread (lambda ()
              (let loop ([i 0] [sum 0])
                (cond
                  [(< i round-trips)
                   (channel-put ping i)
                   (loop (add1 i) (+ sum (channel-get pong)))]
                  [else
                   (channel-put ping eof)
                   (channel-put sums sum)])))))
  (for/sum ([_ (in-range pairs)]) (channel-get sums)))

;; chain: a sender thread puts 0..messages-1 into a chain of `links` relay
;; threads; the main thread gets them from the end and sums them.
(define (chain links messages)
  (define first (make-channel))
  (define last
    (for/fold ([in first]) ([_ (in-range links)])
      (define out (make-channel))
      (thread (lambda ()
                (let loop ()
                  (define v (channel-get in))
                  (channel-put out v)
                  (unless (eof-object? v)
                    (loop)))))
      out))
  (thread (lambda ()
            (for ([i (in-range messages)])
              (channel-put first i))
            (channel-put first eof)))
  (let loop ([sum 0])
    (define v (channel-get last))
    (if (eof-object? v)
        sum
        (loop (+ sum v)))))

;; fan-out: one producer thread puts 0..messages-1 on one channel that
;; `consumers` threads compete to get from, then one `eof` per consumer;
;; each consumer sums what it gets. Result: the total.
(define (fan-out consumers messages)
  (define ch (make-channel))
  (define sums (make-channel))
  (for ([_ (in-range consumers)])
    (thread (lambda ()
              (let loop ([sum 0])
                (define v (channel-get ch))
                (if (eof-object? v)
                    (channel-put sums sum)
                    (loop (+ sum v)))))))
  (thread (lambda ()
            (for ([i (in-range messages)])
              (channel-put ch i))
            (for ([_ (in-range consumers)])
              (channel-put ch eof))))
  (for/sum ([_ (in-range consumers)]) (channel-get sums)))

;; spawn-join: the main thread starts `tasks` threads (thread i stores i in
;; its slot of a vector: Racket threads return no value) and waits for each
;; in start order with `thread-wait`. Result: the sum of the slots.
(define (spawn-join tasks)
  (define results (make-vector tasks 0))
  (define threads
    (for/list ([i (in-range tasks)])
      (thread (lambda () (vector-set! results i i)))))
  (for-each thread-wait threads)
  (for/sum ([v (in-vector results)]) v))

(define (workload name params)
  (define (p n) (param params n))
  (case name
    [("ping-pong") (let ([a (p 'pairs)] [b (p 'round_trips)]) (lambda () (ping-pong a b)))]
    [("chain") (let ([a (p 'links)] [b (p 'messages)]) (lambda () (chain a b)))]
    [("fan-out") (let ([a (p 'consumers)] [b (p 'messages)]) (lambda () (fan-out a b)))]
    [("spawn-join") (let ([a (p 'tasks)]) (lambda () (spawn-join a)))]
    [else (error 'fibra-bench "unknown workload ~s" name)]))

(module+ main
  (define args (vector->list (current-command-line-arguments)))
  (when (null? args)
    (usage))
  (define params (map parse-param (cdr args)))
  (measure (param params 'runs) (workload (car args) params)))
