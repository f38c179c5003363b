# Reference model of the Python MemoryLab text functions, used to write
# novelty/testdata goldens. Verified against the scores in the Python ledger.
import re, json, difflib, random, sys
PHRASES = [("matrix learning rate","matrix_lr"),("matrix lr","matrix_lr"),("embedding learning rate","embedding_lr"),("unembedding learning rate","unembedding_lr"),("scalar learning rate","scalar_lr"),("learning rate","lr"),("step size","lr"),("value embeddings","value_embedding"),("value embedding","value_embedding"),("cuda out of memory","oom"),("out of memory","oom"),("warm down","warmdown"),("cool down","warmdown"),("gradient accumulation","grad_accum"),("batch size","batch_size"),("window pattern","window_pattern"),("attention window","window_pattern"),("head dimension","head_dim"),("model width","width")]
PHRASES.sort(key=lambda p:-len(p[0]))
TOK = {}
for w in "increase increasing raise higher boost larger bigger".split(): TOK[w]="up"
for w in "decrease decreasing lower reduce reducing shorten smaller".split(): TOK[w]="down"
TOK.update({"cooldown":"warmdown","schedule":"sched","optimizer":"optim","activation":"act","geglu":"gated_act","swiglu":"gated_act","glu":"gated_act"})
STOP=set("a an and are as at baseline be by for from if in into is it keep of on or the to try up use with".split())
KEEP2={"lr","kv","ve","fa","mlp","oom"}
CONC={"lr":"matrix_lr embedding_lr unembedding_lr scalar_lr lr","schedule":"warmup warmdown sched","memory":"oom memory vram","architecture":"width depth head_dim heads attention window_pattern act mlp value_embedding","batching":"batch_size grad_accum tokens sequence context","optimizer":"muon adamw optim weight_decay beta"}
def norm(t):
    t=t.lower().replace("-"," ")
    for p,r in PHRASES: t=re.sub(r"\b"+re.escape(p)+r"\b", r, t)
    return " ".join(TOK.get(x,x) for x in re.findall(r"[a-z0-9_]+",t))
def tokens(n): return sorted({x for x in n.split() if x not in STOP and (len(x)>2 or x in KEEP2)})
def nums(n): return sorted(set(re.findall(r"[0-9]+", n)))
def concepts(n):
    toks=set(n.split()); c=set()
    for k,v in CONC.items():
        if toks & set(v.split()): c.add(k)
    return sorted(c|{"num:"+x for x in nums(n)})
def jac(a,b):
    a,b=set(a),set(b)
    if not a and not b: return 0.0
    return len(a&b)/len(a|b)
def sim(a,b):
    na,nb=norm(a),norm(b)
    if not na or not nb: return 0.0
    seq=difflib.SequenceMatcher(None,na,nb).ratio()
    return round(0.30*seq+0.35*jac(tokens(na),tokens(nb))+0.25*jac(concepts(na),concepts(nb))+0.10*jac(nums(na),nums(nb)),3)
def ct(r): return " ".join(x for x in [r['description'],r['hypothesis'],r['family']]+r['tags'] if x)
if __name__=="__main__":
    rnd=random.Random(7)
    recs=[json.loads(l) for l in open('/work/shared/corpus/memorylab-python/experiments.jsonl')]
    texts=[ct(r) for r in recs]
    texts+=["Increase the Matrix Learning-Rate to 0.05","matrix lr 0.04","raise embedding learning rate","CUDA out of memory at batch size 256",
            "warm-down 0.5 with cool down", "cooldown schedule", "SwiGLU activation vs GeGLU", "attention window pattern SSSL", "head dimension 128, model width 768",
            "value embeddings removed", "unembedding learning rate 0.004", "scalar learning rate x2", "step size 3e-4", "gradient accumulation 4 steps", "Kelvin \u212a sign", "\u0130stanbul learning rate", "",
            "!!!", "a the to", "lr", "uplr", "learning rates", "relearning rate", "ÉLR learning rate", "learning\trate", "optimizer: AdamW β2=0.95", "x"*300, ("abc "*80).strip()]
    # long near-duplicates to exercise autojunk (normalised length >= 200)
    base="increase matrix learning rate to 0.05 and warm down 0.3 with value embeddings on every layer while the batch size stays at 524288 tokens and the optimizer is muon with momentum 0.95 plus adamw for embeddings and head dimension 128 "
    for k in range(12):
        w=base.split(); rnd.shuffle(w); texts.append(" ".join(w[:rnd.randint(20,len(w))]) + " " + str(rnd.randint(0,99)))
    pairs=[]
    for i,a in enumerate(texts):
        for b in texts:
            if rnd.random()<0.25 or (i<20): pairs.append((a,b))
    out={"texts":[{"text":t,"norm":norm(t),"tokens":tokens(norm(t)),"concepts":concepts(norm(t)),"numbers":nums(norm(t))} for t in texts],
         "pairs":[{"a":a,"b":b,"sim":sim(a,b)} for a,b in pairs]}
    # raw difflib ratios, arbitrary bytes, long strings
    ratios=[]
    for k in range(300):
        la=rnd.choice([0,1,5,30,150,199,200,201,260,450]); lb=rnd.choice([0,1,5,30,150,199,200,201,260,450])
        alpha=rnd.choice(["ab","abc ","abcdefghij_ 0123","xyz.-!ABC"])
        a="".join(rnd.choice(alpha) for _ in range(la)); b="".join(rnd.choice(alpha) for _ in range(lb))
        if k%3==0 and la>10: b=a[:la//2]+b[:lb//2]
        ratios.append({"a":a,"b":b,"ratio":difflib.SequenceMatcher(None,a,b).ratio()})
    out["ratios"]=ratios
    json.dump(out,open(sys.argv[1],"w"),indent=1,ensure_ascii=False)
