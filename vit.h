/* vit.h - v0.5.34 - ViT and attention in C - MIT or public domain

   QUICK START
     #define VIT_IMPLEMENTATION      // in exactly one .c file
     #include "vit.h"
     vit_model m; vit_model_load_file(&m, "model.safetensors");  // then vit_model_forward()

   BUILD OPTIONS (define before including the implementation)
     VIT_MALLOC / VIT_FREE   replace malloc/free (both or neither)
     VIT_ASSERT              internal invariants only (default: assert)
     VIT_STATIC              every function private to the implementing file
     VIT_NO_STDIO            no file API (loaders from memory remain)
     VIT_NO_PNG              leave out stb_image_write and the PNG writers
     VIT_NO_IMAGE            leave out stb_image and the image loaders
     VIT_STB_FLAT            include "stb_image.h" rather than <stb/stb_image.h>
     VIT_NO_SIMD             every kernel runs its scalar _ref version
     VIT_NO_AMX              BF16 and I8 products keep off Intel's AMX tiles
                             (used where the compiler targets AMX-BF16/INT8,
                             -march=native on Sapphire Rapids, and Linux
                             grants the tile state)
     VIT_MAX_THREADS         vit_set_threads' upper bound (default 1024)
     VIT_NO_THREADS          no thread pool: every loop on the calling thread
     Compile with -mavx2 -mfma (or -march=native: AVX-512 where present) on
     x86; AArch64 gets NEON, emcc -msimd128 WebAssembly SIMD, through SIMDe.
     Threads need no flag (SIMD AND THREADS). SIMDe (<simde/...>) must be
     on the include path unless VIT_NO_SIMD; stb (Debian's libstb-dev
     layout, <stb/...>) unless VIT_NO_IMAGE and VIT_NO_PNG. If your program
     already includes stb_image.h or stb_image_write.h with its
     implementation, vit.h uses it.

   MEMORY
     The library calls malloc only in vit_arena_init_alloc. A forward pass
     never allocates: it takes tensors from a caller's activation arena and
     rewinds per layer. An arena made with a NULL buffer only counts bytes;
     vit_model_memory() runs the real forward code in that mode, so the size it
     reports is the size the forward uses with the thread count set then
     (attention keeps one scratch slot per thread; run with more threads
     later and it takes the slots that fit). A tensor lives as long as its arena,
     and every function that creates tensors takes that arena first.

   EXPLANATIONS (the reverse pass)
     vit_model_reverse runs a ViT forward that keeps what the chain rule
     reads, then takes the gradient of sum(out * seed) back to every
     block's attention probabilities and tokens and to the input pixels
     (no weight gradients). vit_explain turns it into a map for one class
     or direction: grad rollout, Chefer's relevance, LeGrad, Grad-CAM,
     saliency, gradient x input, integrated gradients (its steps four at
     a time, one batch each), each equal to its authors' code
     (tests/test_reverse.c, tools/explain_reference.py). The kept
     activations live in the caller's
     arena, sized by vit_model_reverse_memory and vit_explain_memory:
     ViT-B/16 at B = 1 keeps about 110-130 MB (the forward alone needs 5
     MB) and costs 1.9-2.6 forwards (rollout, which needs no gradient,
     1.25; bench/bench_explain.c). Models
     without a class token (average or attention pooling) read the mean of
     every token's row where a method reads the class token's. F32 weights
     only: a BF16 or I8 file's gradient would not be its quantised
     forward's, and is refused.

   ERRORS
     Fallible functions return vit_result (VIT_OK = 0). vit_result_string()
     names a code; vit_last_error() gives the specific, thread-local message,
     e.g. "m.safetensors: tensor 'encoder.ln.weight' has shape [48], expected
     [64] (hidden_dim=64)". Bad input never aborts; on failure outputs are
     left untouched. Files (vit_npy_save, the PNG writers) are written
     whole to a temporary file beside the target, every write and the close
     checked, then renamed over it: a failed write (a full disk) returns
     VIT_ERR_IO with errno's text and leaves the previous file intact. A
     symbolic link is written through (the file it names is replaced, the
     link stays), and a replaced file keeps its mode.

   SHAPES
     Row-major float32, outermost first, exactly as PyTorch prints them.
     Letters: B batch, N tokens, C channels, NH heads, HS head size, H/W
     spatial size. Images are (B, C, H, W); token sequences (B, N, C).
     Outlook attention alone takes channels last, (B, H, W, C), as VOLO.

   SIMD AND THREADS
     Every kernel vit_k_<op> has a scalar twin vit_k_<op>_ref that is its
     specification; tests hold them equal. Kernels are written once against
     SIMDe: AVX-512 or AVX2+FMA natively on x86, NEON on ARM, portable C
     elsewhere. Threads come from vit.h's own pool, on POSIX threads (Linux,
     macOS, BSDs; glibc before 2.34 wants -pthread when linking) or Win32's
     (MinGW, clang-cl); no flag is needed and OpenMP is not used. They
     split only independent outer loops, so results are bit-identical for
     any thread count. Small calls stay on the calling thread.
     vit_set_threads(n) sets the count for the forward passes the calling
     thread starts (the default is OMP_NUM_THREADS when set, else one per
     processor online) and vit_get_threads() reads it. Size an arena with
     vit_model_memory after setting it (attention keeps a scratch slot per
     thread). A waiting thread spins for tens of microseconds, then sleeps,
     so threads share cores with other busy processes without a penalty.
     One forward pass at a time has the pool: forward passes started
     meanwhile on other threads of the program run on their own thread.
     The pool's threads start with the first parallel loop and live until
     the program ends. VIT_NO_THREADS, WebAssembly without -pthread and
     compilers other than GCC and clang (MSVC) run single-threaded.

   WEIGHTS FORMAT
     safetensors: 8-byte little-endian header length, JSON header, raw data.
     tools/export.py writes the module's own state_dict names, and puts the
     module kind and hyperparameters in "__metadata__" (format="vit.h",
     kind, naming, ...). Each kind's keys and namings are its section's
     tables (VIT_KINDS); vit_model_describe() prints a file's. F32 is used
     in place; F16 is converted.
     BF16 and I8: the weight matrix of every dense layer (nn.Linear,
     nn.MultiheadAttention's in_proj_weight), and the patch embedding's
     conv kernel as the (dim, in_channels P P) matrix its patches' product
     takes, stays as the file holds it,
     read in place from the mapped file, and products run on it (BF16:
     half the memory, I8: a quarter). A file's dense weights are packed in
     place at load (in its private mapping, or the buffer read_whole
     reads): F32 in every SIMD build, BF16 and I8 where the build has the
     type's dot product (below). Each panel of p rows (p = 32 with AVX-512,
     16 otherwise; all but a last partial one, which stays row-major) holds
     its rows' 4-byte groups along k (F32 values, BF16 pairs, I8 quads)
     column by column, group g of row p i + j at 4 (p g + j) bytes from the
     panel's start; I8 then carries its panels' column sums.
     vit_tensor.pack records that (the implementation's private record;
     read data and q through it only as vit.h does). The products read
     them as they lie, one run of memory per block (ViT-B/16 at batch 1:
     F32 9%, BF16 and I8 about 7% faster than packing each block as it
     runs); the cost is the load (ViT-B/16 F32: 0.3 s against 0.03 s, most
     of it the mapping's pages becoming the process's own).
     vit_load_opts.keep_layout = 1 leaves every weight as the file lays it
     out: nothing in the file's pages is written, they stay shared between
     processes, and the products pack each block as they run (a matrix
     made at load, such as a qkv fused from q, k and v, is still packed).
     Weights loaded from memory stay row-major (pack NULL), and so do
     weights a program builds itself. Anything else in a BF16 or I8 file
     (biases, LayerNorm, class token, position embedding, relative
     position bias tables, other conv kernels) is widened to F32, and LayerNorm
     and softmax stay F32. Where vdpbf16ps runs
     (AVX512_BF16, and SIMDE_NO_NATIVE builds), the attention of such a
     file runs its two products (q k^T, probabilities times v) in BF16 too,
     1.5x faster on Zen 4; elsewhere they stay F32. An I8 file's q k^T runs
     in int8 where vpdpbusd runs too and no AMX tiles are built: each row
     of a head's q and k on its own symmetric scale (max |x| / 127), the
     sums exact; the probabilities and v stay BF16. BF16 products
     round x to bf16 and sum in f32; I8 weights are symmetric per output
     row (w = scale[n] q[n][k], q in [-127, 127], the F32 tensor
     '<name>_scale' beside each), and each row of x is quantised to u8
     (asymmetric, per row) as the product runs; sums are exact int32.
     __metadata__ "activation_bits" "7" (tools/export.py --activation-bits
     7) rounds x to 0..127 instead, on every build: AVX2 without VNNI then
     takes vpmaddubsw on u8 x and s8 w directly (2 x 127 x 127 fits its
     int16 pair sums), 1.4x faster there than the 8-bit form below, for
     twice x's rounding step (ViT-B/16, random weights: relative L2 to F32
     2.4e-2 -> 3.5e-2; trained Fashion-MNIST models agree with F32 as
     often); "8" is the default, anything else is refused.
     vdpbf16ps (AVX512_BF16), vpdpbusd (AVX512_VNNI, AVX-VNNI), NEON
     sdot (ARMv8.2 dotprod, through SIMDe) and for I8 AVX2's vpmaddubsw
     where the compiler targets them, f32 FMAs on widened weights
     elsewhere, same results to rounding. An I8 value of -128 is refused,
     and so are I8 anywhere but a dense layer's weight matrix (or the patch
     embedding's kernel) and a row
     scale above FLT_MAX / 127 (scale * q would not be finite). A row of x
     holding a NaN or an Inf makes that row's I8 outputs NaN (F32's are
     not finite either); a range past FLT_MAX (+-3e38) is still quantised.
     tools/export.py --dtype BF16|I8 writes such files, and --from
     converts an F32 one (__metadata__ "quantization" says
     int8-per-channel-symmetric); timm and transformers checkpoints saved
     in BF16 are read the same way. Accuracy, ViT-B/16 with random
     weights: logits within relative L2 7e-3 (BF16) and 2.5e-2 (I8) of F32.
     A ViT checkpoint without that metadata is read by its tensor names:
     timm (patch_embed, blocks.N, norm or fc_norm, head), Hugging Face
     transformers' ViTForImageClassification and ViTModel ([vit.]embeddings,
     encoder.layer.N, layernorm, classifier or pooler) or torchvision
     (conv_proj, encoder.layers, heads). Sizes come from the shapes; the
     heads from vit_load_opts, else a config.json (given, or beside the
     file), else the standard widths (192:3, 384:6, 512:8, 768:12, 1024,
     1280, 1408 and 1664:16); m->inferred says which, and so does the log.
     A config.json that names its model is the authority on what it
     computes, as rotary position embeddings, a norm's placement or an
     activation have no tensors: timm's "architecture", transformers'
     "model_type" and "architectures" must be a name vit.h runs, in the
     naming the tensors follow: timm's VisionTransformer as vit_*_patch*,
     deit*, flexivit_* and eva_large_patch14_* (LayerNorm eps 1e-5 for
     *_clip_*, QuickGELU for *_clip_quickgelu_*, GELU-tanh for SigLIP 2),
     timm's Beit as beit_* and beitv2_* (naming beit: no position
     embedding; blocks.N.attn.relative_position_bias_table, or one shared
     rel_pos_bias.relative_position_bias_table, (R, heads) with R =
     (2G-1)^2 + 3 for a G x G grid, read through timm's
     relative_position_index, computed at load; q_bias and v_bias beside
     qkv.weight, k none; gamma_1 and gamma_2), timm's Eva as eva02_* but
     EVA-02-CLIP-E, eva_giant_*, vit_*_patch16_dinov3* and *_lingbot
     (DINOv3), vit_pe_core_* (Perception Encoder core), vit_*_patch16_rope_*
     (NAVER's RoPE-Axial and RoPE-Mixed, *_ape_* with a position embedding
     too, and timm's *_rope_reg*_gap_256) (naming eva: Beit's block names
     with pos_embed, reg_token, norm_pre and attn_pool. where the model has
     them; the attention fused with q_bias and v_bias (EvaAttention), with
     one qkv.bias (AttentionRope: the architecture says which), without
     biases, or as q_proj, k_proj (no bias), v_proj, with EVA-CLIP's
     attn.norm before proj; the SwiGLU packed in fc1 or as fc1_g, fc1_x and
     mlp.norm before fc2; the rotary embedding, which has no tensors but
     rope.freqs (RoPE-Mixed's learned frequencies), from the name: timm's
     RotaryEmbeddingCat, RotaryEmbeddingDinoV3 or RotaryEmbeddingMixed on
     the patches' q and k with the entrypoint's reference grid,
     temperature, offset, grid order and pairing, model_args
     use_rot_pos_emb, rope_type, ref_feat_shape, rope_temperature,
     rope_grid_offset, rope_grid_indexing and rope_rotate_half read over
     them; PE's attention pool has 8 heads of its own (attn_pool_num_heads)
     and reads every token, the class token too, as timm's Eva does;
     EVA-01 giant has no rotary embedding),
     and transformers' vit, dinov2, dinov2_with_registers, clip,
     clip_vision_model, siglip, siglip_vision_model, beit and
     data2vec-vision (BeitModel, BeitForImageClassification and their
     Data2VecVision twins; naming hf_beit, or hf_data2vec under
     data2vec_vision.: ViT's names with the key's bias absent, lambda_1
     and lambda_2, attention.attention.relative_position_bias.* per layer
     or encoder.relative_position_bias.* shared, indexed as timm's;
     pooler.layernorm after the mean of the patch tokens, or layernorm;
     the mask token left; use_absolute_position_embeddings,
     use_relative_position_bias, use_shared_relative_position_bias,
     layer_scale_init_value and use_mean_pooling checked against the
     tensors; their other heads refused by name). Other names are
     refused (VIT_ERR_UNSUPPORTED), each with what it is and lacks (timm's
     Eva class: EVA-02-CLIP-E, Perception Encoder's language and spatial
     towers, Sapiens2; BEiT-3, relative positions, SAM, NaFlexViT, hybrid,
     AIMv2, parallel or post-norm blocks; README.md lists the patterns).
     Only without such a name do the tensor names alone decide (an Eva's
     naming is chosen by its name). Sizes a config gives
     (transformers' hidden_size, num_hidden_layers, intermediate_size,
     image_size, patch_size, num_channels; timm's model_args embed_dim,
     depth, reg_tokens and img_size) must be the weights' (VIT_ERR_FORMAT,
     naming the key and the tensor), and timm's model_args that change
     the computation without tensors of their own (pool_include_prefix,
     scale_attn_norm, final_norm, proj_bias, pos_embed, norm_layer,
     attn_layer, ...: vit__timm_args) must have values vit.h runs.
     Class names: vit_model_label(), from a labels file, id2label or
     label_names. A tensor that does not fit is named in the refusal. A
     key given twice (a tensor name, a metadata key, a tensor's dtype,
     shape or data_offsets, a second __metadata__), which Python's json
     would resolve to the last, is refused and named. Tensors are looked
     up by binary search, so no header makes loading quadratic. A weight
     that is NaN or Inf (F32, F16 or BF16) is refused at load, the tensor
     and element named (VIT_ERR_NONFINITE), unless vit_load_opts sets
     allow_nonfinite; the check reads every weight once, so a mapped file
     is paged in whole. Float metadata that is 0 or infinite as a float32
     (ln_eps = 1e-50) is refused.

   LIMITATIONS
     Little-endian hosts only. Inference only; dropout is identity.
     Tensors have at most VIT_MAX_DIMS dimensions and no strides; at most
     16384 tokens; activation buffers below 2^31 elements.
     Checkpoints need a square grid of square patches. Rotary position
     embeddings other than timm's axial, DINOv3's and mixed ones (MRoPE),
     grouped key-value heads (Sapiens2), a model ending without a
     LayerNorm (PE's language and spatial towers),
     relative positions other than BEiT's bias (timm's
     VisionTransformerRelPos, SAM), parallel or post-norm blocks, RmsNorm,
     a norm inside the attention, the MLP or the patch embedding,
     differential attention and convolutional stems are not run: a
     config.json naming such a model is refused by name. A BEiT runs at
     its own image size only (timm's Beit has no dynamic_img_size; its
     tables are not resized), of at most 4097 tokens (its index is kept
     whole), and with either a shared or a per-block relative position
     bias, not both. A file without a config.json that
     names its model is read by its tensor names alone, which cannot see
     a difference without tensors (RoPE, an activation): keep the
     config.json beside such files (a model with rotary embeddings and no
     position embedding also needs its image size from there).
     Images are decoded by stb_image (Debian's 2.27, or the program's own),
     compiled for PNG, JPEG, BMP and PNM only, and only after vit.h has
     checked the file's structure itself: every chunk, segment or row the
     header declares must be in the file (PNG chunks must match their CRC
     and end with IEND, a JPEG with its end marker), every table a JPEG
     scan uses must be defined before it, and the pixel data must fit:
     exactly for BMP and PNM, by the densest coding the format allows for
     PNG (1032 bytes per byte) and JPEG (2 bits per 8x8 block, 1 in a
     progressive DC scan). So a truncated file is refused as PIL refuses
     it (a PNG without IEND too, which PIL takes); palette indices past a
     PNG's palette read grey k, as PIL reads them, and past a BMP's are
     refused. JPEG pixels differ from PIL's (libjpeg) by up to 2/255.
     vit_model_load_file maps the file where there is mmap (POSIX), private
     and writable (dense weights are packed in place, their pages then the
     process's own): a file truncated or rewritten while the model is
     loaded can kill the next forward pass with SIGBUS.
     vit_load_opts.read_whole = 1 reads it into memory instead, for files
     that may change. Files are checked
     (a directory, a missing file with errno's text, the size against
     what is read from it) before anything is read or allocated.
     The image and PNG functions allocate through stb (VIT_MALLOC/VIT_FREE),
     outside the arenas. GCC 12 on x86 without -mavx (plain gcc -O2) prints
     one psabi note for SIMDe's 32-byte vectors; -mavx2 -mfma or
     -march=native (the fast build) or -Wno-psabi avoid it.
*/
#ifndef VIT_H_INCLUDED
#define VIT_H_INCLUDED

#define VIT_VERSION_MAJOR 0
#define VIT_VERSION_MINOR 5
#define VIT_VERSION_PATCH 34
#define VIT_VERSION_STRING "0.5.34"

#ifdef VIT_STATIC
#if defined(__GNUC__) || defined(__clang__)
#define VITDEF static __attribute__((unused)) /* a program need not call them all */
#else
#define VITDEF static
#endif
#else
#define VITDEF extern
#endif

#include <stddef.h>
#include <stdint.h>

#ifndef VIT_MAX_DIMS
#define VIT_MAX_DIMS 4
#endif
#ifndef VIT_ALIGN
#define VIT_ALIGN 64
#endif
#ifndef VIT_MAX_THREADS
#define VIT_MAX_THREADS 1024 /* vit_set_threads' limit */
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- public types ---- */

typedef enum vit_result {
    VIT_OK = 0,
    VIT_ERR_ARG,         /* a NULL pointer or an impossible parameter */
    VIT_ERR_OOM,         /* an arena or malloc ran out */
    VIT_ERR_IO,          /* open/read/write failed */
    VIT_ERR_FORMAT,      /* the file is not what it claims to be */
    VIT_ERR_SHAPE,       /* a tensor or input has the wrong shape */
    VIT_ERR_DTYPE,       /* a tensor has an unsupported element type */
    VIT_ERR_MISSING,     /* a required tensor or metadata key is absent */
    VIT_ERR_UNSUPPORTED, /* valid input this build cannot handle */
    VIT_ERR_NONFINITE,   /* NaN or Inf in an input */
    VIT_ERR_OVERFLOW     /* a size computation overflowed */
} vit_result;

typedef struct vit_arena {
    unsigned char *base; /* NULL: counting mode, nothing is stored */
    size_t size;         /* capacity in bytes */
    size_t used;         /* bytes handed out, including alignment */
    size_t peak;         /* largest `used` ever seen */
    int owned;           /* 1 when base came from vit_arena_init_alloc */
} vit_arena;

/* What a tensor's elements are. Activations and most weights are F32; the
   matrices of dense layers may stay BF16 or I8 as the file holds them (see
   WEIGHTS FORMAT), and then `data` is NULL and `q` holds them. */
typedef enum vit_dtype {
    VIT_DTYPE_F32 = 0,  /* float, in `data` */
    VIT_DTYPE_BF16 = 1, /* bfloat16 bits (uint16_t), in `q` */
    VIT_DTYPE_I8 = 2    /* int8 in [-127, 127], in `q`; row r is scale[r] * q[r][...] */
} vit_dtype;

struct vit__pack; /* the implementation's: how the loader packed a weight for the products */

typedef struct vit_tensor {
    float *data;                  /* contiguous, row-major unless pack; NULL for a BF16 or I8 weight */
    int32_t ndim;                 /* 1..VIT_MAX_DIMS */
    int32_t shape[VIT_MAX_DIMS];  /* outermost first */
    const char *name;             /* weight name, or NULL */
    vit_dtype dtype;              /* VIT_DTYPE_F32 unless a weight stayed BF16 or I8 */
    const void *q;                /* BF16 or I8 elements, row-major like data; else NULL */
    const float *scale;           /* I8: one scale per row (shape[0]); else NULL */
    const struct vit__pack *pack; /* a loaded dense weight packed for the products (see WEIGHTS FORMAT),
                                     private; NULL: data or q is row-major, as a program builds it */
    int32_t act_bits;             /* I8: the bits its products round each row of x to: 8 (or 0), or 7 (the
                                     file's activation_bits, see WEIGHTS FORMAT); others are refused */
} vit_tensor;

/* GELU: x/2 (1 + erf(x/sqrt2)), torch.nn.GELU(); GELU_TANH: its tanh
   approximation (GELU(approximate='tanh'), transformers' gelu_pytorch_tanh);
   QUICK_GELU: x sigmoid(1.702 x) (OpenAI CLIP); SILU: x sigmoid(x). */
typedef enum vit_act {
    VIT_ACT_GELU = 0,
    VIT_ACT_RELU = 1,
    VIT_ACT_GELU_TANH = 2,
    VIT_ACT_QUICK_GELU = 3,
    VIT_ACT_SILU = 4
} vit_act;
#define VIT__ACT_WORDS "gelu,relu,gelu_tanh,quick_gelu,silu" /* the metadata's names, in enum order */

/* The sizes of one multi-head attention call (vit_k_attention): B
   sequences of N tokens, NH heads of HS features; scores scale * q.k,
   probabilities softmax(scores) * post. */
typedef struct vit_attn_shape {
    int32_t B, N, NH, HS;
    int32_t ld;         /* floats from one token's row of q, k or v to the next: >= NH*HS */
    float scale, post;
} vit_attn_shape;

/* The sizes of attention split in two (vit_k_scores, vit_k_attend): head h
   of a row of q, k or v sits in its columns [h*HS, (h+1)*HS). */
typedef struct vit_heads_shape {
    int32_t B, NH;      /* batch, heads */
    int32_t Nq, Nk;     /* queries; keys and values (per batch item) */
    int32_t HS;         /* head size */
    int32_t ldq, ldk;   /* floats from one row of q (k) to the next: >= NH*HS (vit_k_scores) */
    int32_t ldv;        /* the same for v (vit_k_attend) */
    float scale;        /* scores = scale * q.k (vit_k_scores) */
} vit_heads_shape;

/* The sizes of AFT-full/local (vit_k_aft). */
typedef struct vit_aft_shape {
    int32_t B, T, D;    /* q, k, v and y are (B, T, D): B sequences of T steps, D features */
    int32_t ldw;        /* floats from one row of the position biases w (T, T) to the next: >= T */
    int32_t s;          /* window: w[t][t'] counts where |t - t'| < s, 0 elsewhere (AFT-full: s >= T) */
} vit_aft_shape;

/* The sizes of a depth-wise convolution, channels last (vit_k_dwconv). */
typedef struct vit_conv_shape {
    int32_t B, H, W, C; /* input (B, H, W, C) */
    int32_t K;          /* kernel size: K x K taps per channel */
    int32_t stride;     /* both ways; output Ho = (H + 2 pad - K) / stride + 1, the same for Wo */
    int32_t pad;        /* zeros on every side */
} vit_conv_shape;

/* The sizes of a patch embedding's convolution (vit_k_patch_conv): kernel =
   stride = P, no padding. */
typedef struct vit_patch_shape {
    int32_t B, C, H, W; /* input images (B, C, H, W) */
    int32_t P;          /* patch size; H/P by W/P patches (a remainder is dropped) */
    int32_t D;          /* output channels: y (B, (H/P)*(W/P), D) */
} vit_patch_shape;
/* CLS: the class token; MEAN: all tokens, class token included (the einops ViT);
   AVG: the patch tokens only (timm's global_pool='avg'); MAP: attention
   pooling, a learned probe attending over the patch tokens, then an MLP
   (timm's global_pool='map', SigLIP). */
typedef enum vit_pool { VIT_POOL_CLS = 0, VIT_POOL_MEAN = 1, VIT_POOL_AVG = 2, VIT_POOL_MAP = 3 } vit_pool;
/* vit_config.rope: which of timm's rotary position embeddings */
typedef enum vit_rope { VIT_ROPE_NONE = 0, VIT_ROPE_AXIAL = 1, VIT_ROPE_DINOV3 = 2, VIT_ROPE_MIXED = 3 } vit_rope;

/* Scaled dot-product attention on x, x, x. */
typedef struct vit_sdpa_params {
    float scale;        /* 0: 1/sqrt(C) */
} vit_sdpa_params;

typedef struct vit_mha_params {
    int32_t dim;                 /* C, embedding size */
    int32_t heads;               /* NH; C % NH == 0 */
    int32_t scale_after_softmax; /* 1: softmax(Q K^T) / sqrt(C), the einops ViT's order;
                                    0: softmax(Q K^T / sqrt(C/NH)) */
    int32_t qk_norm;             /* 1: LayerNorm on each head's q and k (timm's qk_norm) */
    float qk_eps;                /* its epsilon */
} vit_mha_params;

/* Any of the three PyTorch layouts is brought to this one at load time. A
   bias whose data is NULL is zero. */
typedef struct vit_mha_weights {
    vit_tensor qkv_w;   /* (3C, C): rows q, then k, then v (nn.MultiheadAttention) */
    vit_tensor qkv_b;   /* (3C), or none */
    vit_tensor out_w;   /* (C, C) */
    vit_tensor out_b;   /* (C), or none */
    vit_tensor q_norm_w, q_norm_b; /* (C/NH): qk_norm only */
    vit_tensor k_norm_w, k_norm_b; /* (C/NH): qk_norm only */
    vit_tensor rel_bias;           /* (NH, R): each head's relative position bias table (BEiT), or none */
    const int32_t *rel_index;      /* (rel_n, rel_n): the entry of a head's table each score adds; with rel_bias */
    int32_t rel_n;                 /* the tokens rel_index is for: the input's N must be it */
    const float *rope;             /* (rope_n, 2, HS): rotary cosines and sines (vit_k_rope) of the tokens
                                      after the first rope_first, applied to q and k (EVA-02), or NULL */
    int32_t rope_first, rope_n;    /* tokens left unrotated before them (the class token); tokens rotated */
    int32_t rope_half;             /* 1: pairs in halves (vit_k_rope_half: DINOv3), 0: interleaved */
    int32_t rope_heads;            /* 1: a table per head, rope (NH, rope_n, 2, HS) (timm's mixed RoPE) */
    vit_tensor norm_w, norm_b;     /* (C): a LayerNorm on the heads' output before out_w (EVA-CLIP), or none */
} vit_mha_weights;

typedef struct vit_mlp_params {
    int32_t in_dim;     /* input features */
    int32_t hidden_dim; /* between the layers (after the gate with glu) */
    int32_t out_dim;    /* after fc2 */
    vit_act act;        /* between fc1 and fc2 */
    int32_t glu;        /* 1: fc1 gives 2 * hidden_dim, act(first half) * second half (SwiGLU) */
    float norm_eps;     /* the LayerNorm between the activation and fc2 (norm_w set: EVA-02's sub-LN) */
} vit_mlp_params;

typedef struct vit_mlp_weights {
    vit_tensor fc1_w;   /* (hidden, in); glu: (2 hidden, in) */
    vit_tensor fc1_b;   /* (hidden) or (2 hidden), or none */
    vit_tensor fc2_w;   /* (out, hidden) */
    vit_tensor fc2_b;   /* (out), or none */
    vit_tensor norm_w, norm_b; /* (hidden): a LayerNorm on the hidden features before fc2, or none */
} vit_mlp_weights;

typedef struct vit_block_params {
    int32_t dim;        /* C */
    int32_t heads;      /* NH */
    int32_t mlp_dim;    /* MLP hidden size */
    float ln_eps;       /* LayerNorm epsilon (also qk_norm's): 1e-6 torchvision and timm, 1e-5 seeds and CLIP */
    vit_act act;        /* MLP activation */
    int32_t scale_after_softmax; /* see vit_mha_params */
    int32_t layer_scale; /* 1: attention and MLP outputs scaled by the gammas ls1, ls2 (timm's init_values) */
    int32_t qk_norm;    /* see vit_mha_params */
    int32_t glu;        /* see vit_mlp_params */
    int32_t mlp_norm;   /* 1: a LayerNorm inside the MLP, before fc2 (EVA-02 B/L's sub-LN) */
    int32_t attn_norm;  /* 1: a LayerNorm on the attention's output before its projection (EVA-CLIP) */
} vit_block_params;

typedef struct vit_block_weights {
    vit_tensor ln1_w, ln1_b;  /* (C) */
    vit_mha_weights attn;
    vit_tensor ls1;           /* (C): layer_scale only */
    vit_tensor ln2_w, ln2_b;  /* (C) */
    vit_mlp_weights mlp;
    vit_tensor ls2;           /* (C): layer_scale only */
} vit_block_weights;

/* Tokens out: the prefix tokens in the order class, distillation,
   registers, then the (H/P)*(W/P) patch tokens. */
typedef struct vit_patch_params {
    int32_t image_size;   /* H = W of the input */
    int32_t patch_size;   /* P: conv kernel = stride */
    int32_t in_channels;  /* input channels */
    int32_t dim;          /* C, output features per token */
    int32_t class_token;  /* 1: prepend the class token */
    int32_t pos_embed;    /* 1: add the position embedding */
    int32_t dist_token;   /* 1: DeiT's distillation token after the class token */
    int32_t reg_tokens;   /* register tokens after those */
    int32_t pos_prefix;   /* prefix tokens the position embedding covers, from the first: all of
                             them (timm's default), none (timm's no_embed_class), or the class
                             token alone (transformers' DINOv2 with registers) */
} vit_patch_params;

typedef struct vit_patch_weights {
    vit_tensor conv_w;    /* (C, in_channels, P, P) F32; a BF16 or I8 file's: the (C, in_channels P P) matrix,
                             kept in its dtype as a dense layer's weight (its patches' product on the dot-product
                             tiles) */
    vit_tensor conv_b;    /* (C), or none (CLIP) */
    vit_tensor cls;       /* (C) class token */
    vit_tensor dist;      /* (C) distillation token */
    vit_tensor reg;       /* (reg_tokens, C) register tokens */
    vit_tensor pos;       /* (pos_prefix + N, C) */
} vit_patch_weights;

/* Squeeze-and-Excitation, torchvision's SqueezeExcitation. */
typedef struct vit_se_params {
    int32_t channels;     /* C, input and output channels */
    int32_t squeeze;      /* S, channels between fc1 and fc2 */
} vit_se_params;

typedef struct vit_se_weights {
    vit_tensor fc1_w;     /* (S, C, 1, 1) fc1.weight */
    vit_tensor fc1_b;     /* (S) fc1.bias */
    vit_tensor fc2_w;     /* (C, S, 1, 1) fc2.weight */
    vit_tensor fc2_b;     /* (C) fc2.bias */
} vit_se_weights;

/* Scaled dot-product self-attention: one head, no output projection. */
typedef struct vit_sdsa_params {
    int32_t dim;          /* C, n_embd */
} vit_sdsa_params;

typedef struct vit_sdsa_weights {
    vit_tensor q_w;       /* (C, C) query.weight */
    vit_tensor q_b;       /* (C) query.bias */
    vit_tensor k_w;       /* (C, C) key.weight */
    vit_tensor k_b;       /* (C) key.bias */
    vit_tensor v_w;       /* (C, C) value.weight */
    vit_tensor v_b;       /* (C) value.bias */
} vit_sdsa_weights;

/* A classifier of patch sequences: sdsa, ReLU, flatten, Linear. */
typedef struct vit_sdsa_classifier_params {
    int32_t dim;          /* C, n_embd: values per patch */
    int32_t seq_len;      /* N, patches per image */
    int32_t num_classes;  /* outputs of fc */
} vit_sdsa_classifier_params;

typedef struct vit_sdsa_classifier_weights {
    vit_sdsa_weights attn; /* attn.query/key/value.* */
    vit_tensor fc_w;       /* (num_classes, N*C) fc.weight */
    vit_tensor fc_b;       /* (num_classes) fc.bias */
} vit_sdsa_classifier_weights;

/* EMSA (ResT), as self-attention. */
typedef struct vit_emsa_params {
    int32_t dim;          /* C, d_model */
    int32_t d_k;          /* query/key size per head */
    int32_t d_v;          /* value size per head */
    int32_t heads;        /* NH, the seed's h */
    int32_t height;       /* H: with ratio > 1 the N = H*W tokens are an H x W grid */
    int32_t width;        /* W */
    int32_t ratio; /* r > 1: keys/values from a depth-wise conv (kernel r+1, stride r, padding r/2); <= 1: none */
    int32_t transform;    /* 1: 1x1 conv over heads, softmax, InstanceNorm; off when heads == 1 */
} vit_emsa_params;

typedef struct vit_emsa_weights {
    vit_tensor q_w;       /* (NH*d_k, C) fc_q.weight */
    vit_tensor q_b;       /* (NH*d_k) fc_q.bias */
    vit_tensor k_w;       /* (NH*d_k, C) fc_k.weight */
    vit_tensor k_b;       /* (NH*d_k) fc_k.bias */
    vit_tensor v_w;       /* (NH*d_v, C) fc_v.weight */
    vit_tensor v_b;       /* (NH*d_v) fc_v.bias */
    vit_tensor o_w;       /* (C, NH*d_v) fc_o.weight */
    vit_tensor o_b;       /* (C) fc_o.bias */
    vit_tensor sr_w;      /* (C, 1, r+1, r+1) sr_conv.weight; ratio > 1 only */
    vit_tensor sr_b;      /* (C) sr_conv.bias; ratio > 1 only */
    vit_tensor ln_w;      /* (C) sr_ln.weight; ratio > 1 only */
    vit_tensor ln_b;      /* (C) sr_ln.bias; ratio > 1 only */
    vit_tensor tr_w;      /* (NH, NH, 1, 1) transform.conv.weight; transform only */
    vit_tensor tr_b;      /* (NH) transform.conv.bias; transform only */
} vit_emsa_weights;

/* Shuffle attention (SA-Net). */
typedef struct vit_shuffle_params {
    int32_t channels;          /* C; a multiple of 2 * groups */
    int32_t groups;            /* G */
} vit_shuffle_params;

typedef struct vit_shuffle_weights {
    vit_tensor cweight;   /* (1, C/(2G), 1, 1) channel branch scale */
    vit_tensor cbias;     /* (1, C/(2G), 1, 1) channel branch shift */
    vit_tensor sweight;   /* (1, C/(2G), 1, 1) spatial branch scale */
    vit_tensor sbias;     /* (1, C/(2G), 1, 1) spatial branch shift */
    vit_tensor gn_w;      /* (C/(2G)) gn.weight */
    vit_tensor gn_b;      /* (C/(2G)) gn.bias */
} vit_shuffle_weights;

/* Spatial Group-wise Enhance. */
typedef struct vit_sge_params {
    int32_t groups;       /* G; C must be a multiple */
} vit_sge_params;

typedef struct vit_sge_weights {
    vit_tensor weight;    /* (1, G, 1, 1) */
    vit_tensor bias;      /* (1, G, 1, 1) */
} vit_sge_weights;

typedef enum vit_aft_variant { VIT_AFT_FULL = 0, VIT_AFT_SIMPLE = 1, VIT_AFT_LOCAL = 2 } vit_aft_variant;

/* An Attention Free Transformer layer: AFT-full, -simple or -local. */
typedef struct vit_aft_params {
    vit_aft_variant variant; /* full, simple or local */
    int32_t max_seqlen;   /* M: wbias is (M, M) and T <= M (full, local); 0 for simple */
    int32_t dim;          /* D, features per token */
    int32_t hidden_dim;   /* HD, features of q, k, v */
    int32_t s;            /* local: wbias[t][t'] counts where |t - t'| < s, else 0 */
} vit_aft_params;

typedef struct vit_aft_weights {
    vit_tensor q_w;       /* (HD, D) to_q.weight */
    vit_tensor q_b;       /* (HD) to_q.bias */
    vit_tensor k_w;       /* (HD, D) to_k.weight */
    vit_tensor k_b;       /* (HD) to_k.bias */
    vit_tensor v_w;       /* (HD, D) to_v.weight */
    vit_tensor v_b;       /* (HD) to_v.bias */
    vit_tensor proj_w;    /* (D, HD) project.weight */
    vit_tensor proj_b;    /* (D) project.bias */
    vit_tensor wbias;     /* (M, M) pairwise position bias; full and local only */
} vit_aft_weights;

/* Outlook attention (VOLO). */
typedef struct vit_outlook_params {
    int32_t dim;          /* C */
    int32_t heads;        /* NH; C % NH == 0 */
    int32_t kernel_size;  /* K: K x K windows */
    int32_t padding;      /* of the unfold and fold */
    int32_t stride;       /* of the unfold, the fold and the average pooling */
    int32_t qkv_bias;     /* 1: v has a bias */
    float scale;          /* logits scale; 0: (C/NH)^-0.5 */
} vit_outlook_params;

typedef struct vit_outlook_weights {
    vit_tensor v_w;       /* (C, C) v.weight */
    vit_tensor v_b;       /* (C) v.bias; qkv_bias only */
    vit_tensor attn_w;    /* (NH*K^4, C) attn.weight */
    vit_tensor attn_b;    /* (NH*K^4) attn.bias */
    vit_tensor proj_w;    /* (C, C) proj.weight */
    vit_tensor proj_b;    /* (C) proj.bias */
} vit_outlook_weights;

typedef struct vit_config {
    int32_t image_size;          /* input H = W */
    int32_t patch_size;          /* P */
    int32_t in_channels;         /* 3 for RGB, 1 for Fashion-MNIST */
    int32_t dim;                 /* C, hidden size */
    int32_t depth;               /* number of encoder blocks */
    int32_t heads;               /* NH */
    int32_t mlp_dim;             /* MLP hidden size */
    int32_t num_classes;         /* 0: no head, the model returns features */
    int32_t representation_size; /* torchvision pre_logits (Linear+tanh), 0 = none */
    float ln_eps;                /* LayerNorm epsilon */
    vit_act act;                 /* MLP activation */
    vit_pool pool;               /* class token, mean of all tokens, or of the patch tokens (timm's avg) */
    int32_t scale_after_softmax; /* attention scaled after the softmax, see vit_mha_params */
    int32_t norm_tokens;         /* 1: the final LayerNorm runs on every token, then the pool
                                    (timm's avg pool without fc_norm, and MAP); 0: on the pooled vector */
    int32_t class_token;         /* 1: a class token first (0: none, SigLIP) */
    int32_t dist_token;          /* 1: DeiT's distillation token; the logits average head and head_dist */
    int32_t reg_tokens;          /* register tokens (DINOv2 with registers: 4) */
    int32_t pos_prefix;          /* prefix tokens the position embedding covers, see vit_patch_params */
    int32_t patch_bias;          /* 1: the patch conv has a bias (0: CLIP) */
    int32_t qkv_bias;            /* 1: q, k and v have biases */
    int32_t pre_norm;            /* 1: a LayerNorm between the embedding and the blocks (CLIP) */
    int32_t layer_scale;         /* 1: blocks scale their branches by gammas (DINOv2) */
    int32_t qk_norm;             /* 1: LayerNorm on each head's q and k */
    int32_t glu;                 /* 1: SwiGLU MLPs, see vit_mlp_params */
    int32_t pos_embed;           /* 1: a learned position embedding is added (0: BEiT's, which has none) */
    int32_t rel_pos;             /* relative position bias in the attention (BEiT): 0 none, 1 a table per
                                    block, 2 one table all blocks share; needs the class token alone before
                                    the patches */
    int32_t rope;                /* a rotary position embedding on the patch tokens' q and k (vit_rope):
                                    0 none; VIT_ROPE_AXIAL timm's RotaryEmbeddingCat (EVA-02, PE, the
                                    RoPE ViTs); VIT_ROPE_DINOV3 its RotaryEmbeddingDinoV3; VIT_ROPE_MIXED
                                    its RotaryEmbeddingMixed, frequencies learned per block and head */
    int32_t rope_ref;            /* AXIAL: the grid the angles are measured on (timm's ref_feat_shape): a
                                    patch at row y has coordinate (y + rope_offset) / G * rope_ref; 0: y
                                    + rope_offset itself */
    float rope_temp;             /* AXIAL: bands 1 / temp^(j / (HS/4)) (0: 10000); DINOV3: periods
                                    temp^(j / (HS/4)) of coordinates centred in [-1, 1] (0: 100) */
    float rope_offset;           /* timm's rope_grid_offset, added to each coordinate (PE: 1) */
    int32_t rope_xy;             /* 1: the bands of x come first, then y's (timm's grid_indexing 'xy') */
    int32_t rope_half;           /* 1: pairs (j, j + HS/2) (timm's rotate_half), 0: (2j, 2j+1) */
    int32_t pool_heads;          /* VIT_POOL_MAP: the attention pool's heads; 0: heads */
    int32_t pool_prefix;         /* VIT_POOL_MAP: 1: it attends to the prefix tokens too (timm's Eva) */
    int32_t mlp_norm;            /* see vit_block_params */
    int32_t attn_norm;           /* see vit_block_params */
    /* A field that changes what a block, the pool or the head computes needs the reverse pass too
       (vit__rev_block_fwd and _back, vit__rev_head_fwd and _back) and a case in
       tools/explain_reference.py: the explanations' gradients are held against autograd there. */
} vit_config;

/* timm's AttentionPoolLatent (global_pool='map'), transformers'
   SiglipMultiheadAttentionPoolingHead: a probe attends over the tokens,
   then x + MLP(LayerNorm(x)). */
typedef struct vit_attn_pool_weights {
    vit_tensor latent;         /* (C) the probe */
    vit_tensor q_w, q_b;       /* (C, C), (C) */
    vit_tensor kv_w, kv_b;     /* (2C, C), (2C): k rows, then v rows */
    vit_tensor proj_w, proj_b; /* (C, C), (C) */
    vit_tensor norm_w, norm_b; /* (C) */
    vit_mlp_weights mlp;       /* C -> mlp_dim -> C, the model's activation */
} vit_attn_pool_weights;

/* The kind registry: one line per kind of file vit.h runs,
   X(ENUM, name, "kind string", FIELDS).
   - name prefixes the kind's types (vit_<name>_params, vit_<name>_weights),
     its forward (vit_<name>_forward) and the loader hooks at the end of
     its section of the implementation (vit__<name>_keys, _check, _bind,
     _run, _describe, _input);
   - the kind string is what tools/export.py writes in the file's "kind";
   - FIELDS is what vit_model holds for it: VIT_KIND_FIELDS a params and a
     weights struct (m.<name>, m.<name>_w), VIT_KIND_PARAMS params only,
     VIT_KIND_OWN fields written out in vit_model (the ViT and the parts
     of it that are kinds of their own).
   Adding a module is its section and one line here. */
#define VIT_KINDS(X)                                                                                   \
    X(VIT_KIND_VIT, vit, "vit", VIT_KIND_OWN)                                 /* a whole ViT */        \
    X(VIT_KIND_SDPA, sdpa, "sdpa", VIT_KIND_PARAMS)                           /* attention(x, x, x) */ \
    X(VIT_KIND_MHA, mha, "mha", VIT_KIND_FIELDS)                              /* multi-head attention */ \
    X(VIT_KIND_MLP, mlp, "mlp", VIT_KIND_FIELDS)                              /* Linear, act, Linear */ \
    X(VIT_KIND_BLOCK, block, "encoder_block", VIT_KIND_OWN)                   /* pre-LN encoder block */ \
    X(VIT_KIND_PATCH, patch, "patch_embed", VIT_KIND_OWN)                     /* patch embedding */    \
    X(VIT_KIND_SE, se, "se", VIT_KIND_FIELDS)                                 /* squeeze-excitation */ \
    X(VIT_KIND_SDSA, sdsa, "sdsa", VIT_KIND_FIELDS)                           /* one-head self-attention */ \
    X(VIT_KIND_SDSA_CLASSIFIER, sdsa_classifier, "sdsa_classifier", VIT_KIND_FIELDS) /* sdsa, ReLU, fc */ \
    X(VIT_KIND_EMSA, emsa, "emsa", VIT_KIND_FIELDS)                           /* efficient MHSA (ResT) */ \
    X(VIT_KIND_SHUFFLE, shuffle, "shuffle", VIT_KIND_FIELDS)                  /* shuffle attention */  \
    X(VIT_KIND_SGE, sge, "sge", VIT_KIND_FIELDS)                              /* spatial group enhance */ \
    X(VIT_KIND_AFT, aft, "aft", VIT_KIND_FIELDS)                              /* attention free */     \
    X(VIT_KIND_OUTLOOK, outlook, "outlook", VIT_KIND_FIELDS)                  /* outlook attention */

#define VIT_KIND_FIELDS(name) vit_##name##_params name; vit_##name##_weights name##_w;
#define VIT_KIND_PARAMS(name) vit_##name##_params name;
#define VIT_KIND_OWN(name)

typedef enum vit_kind {
#define VIT__KIND_ENUM(e, name, str, fields) e,
    VIT_KINDS(VIT__KIND_ENUM)
#undef VIT__KIND_ENUM
    VIT_KIND_COUNT
} vit_kind;

typedef struct vit_model {
    vit_kind kind;             /* what the file holds */
    char naming[16];           /* weight naming scheme: torchvision, timm, transformers, einops, ... */
    /* The ViT, and the parts of it that are kinds of their own. Weights
       are views into the file or into `arena`. */
    vit_config cfg;            /* VIT_KIND_VIT */
    vit_block_params block;    /* VIT_KIND_BLOCK, and the ViT's blocks */
    vit_patch_params patch;    /* VIT_KIND_PATCH, and the ViT's embedding */
    vit_patch_weights patch_w; /* VIT_KIND_VIT, VIT_KIND_PATCH */
    vit_block_weights *blocks; /* VIT_KIND_VIT: depth entries; BLOCK: 1 */
    vit_tensor norm_w, norm_b; /* final LayerNorm (C) */
    vit_tensor pre_w, pre_b;   /* pre_logits (R, C), (R) */
    vit_tensor head_w, head_b; /* (num_classes, C or R), (num_classes) */
    vit_tensor head_dist_w, head_dist_b; /* (num_classes, C): DeiT's distillation head */
    vit_tensor pre_norm_w, pre_norm_b;   /* (C): pre_norm only */
    vit_attn_pool_weights pool_w;        /* VIT_POOL_MAP only */
    vit_tensor rope;                     /* (G*G, 2, HS): the rotary table of the current grid (cfg.rope only);
                                            VIT_ROPE_MIXED: (depth, NH, G*G, 2, HS) as one run, a table each */
    vit_tensor rope_freqs;               /* (2, depth, NH, HS/2): VIT_ROPE_MIXED's frequencies of x, then y */
    /* Every other kind: m.<name> and m.<name>_w, from VIT_KINDS. */
#define VIT__KIND_FIELD(e, name, str, fields) fields(name)
    VIT_KINDS(VIT__KIND_FIELD)
#undef VIT__KIND_FIELD
    int64_t n_params;          /* number of weights */
    int64_t n_kept[3];         /* of them, in dense layers kept as BF16 and I8 ([VIT_DTYPE_BF16], [VIT_DTYPE_I8]) */
    vit_arena arena;           /* converted weights, block table, names */
    vit_arena file_buf;        /* the file, when read rather than mapped */
    vit_arena extra;           /* weights made after loading (resized position embedding) */
    const char **meta;         /* the file's __metadata__: key, value, key, value, ... */
    int32_t n_meta;            /* number of key/value pairs in meta */
    const char **labels;       /* n_labels class names (see vit_model_label), or NULL */
    int32_t n_labels;          /* num_classes when labels were found, else 0 */
    const char *inferred;      /* file without vit.h metadata: how its config was found, else NULL */
    void *map;                 /* the file's mmap, or NULL */
    size_t map_size;           /* bytes of `map` */
} vit_model;

typedef struct vit_forward_opts {
    int32_t features;   /* 1: return the pre-head representation (B, C) */
    int32_t tokens;     /* 1: return every token after the blocks and the final LayerNorm
                           (B, T, C): the prefix tokens (class, distillation, registers),
                           then the patches row by row (timm's forward_features) */
    vit_tensor *attn;   /* [out] optional: ViT: depth tensors receiving each
                           block's (B, NH, N, N) probabilities; a module: what
                           its vit_<name>_forward puts in attn (shuffle: two
                           tensors). Valid until the arena is rewound */
} vit_forward_opts;

/* A reverse pass (vit_model_reverse) of a ViT: the gradient of target =
   sum(out * seed), out being what vit_model_forward gives. The [out]
   tables the caller passes (each NULL or of the length given) receive
   tensors from the activation arena, valid until it is rewound. */
typedef struct vit_reverse {
    const vit_tensor *seed;  /* (B, W): d target / d out, W out's width: a one-hot row for a class's
                                logit, or any vector (a features-only model's direction) */
    int32_t features;        /* 1: out is the representation (B, C), as vit_forward_opts.features */
    vit_tensor out;          /* [out] (B, W): the forward's output */
    vit_tensor *attn;        /* [out] depth tensors (B, NH, T, T): each block's probabilities */
    vit_tensor *grad_attn;   /* [out] depth tensors (B, NH, T, T): d target / d probabilities */
    vit_tensor *tokens;      /* [out] depth + 1 tensors (B, T, C): block 0's input (after the patch
                                embedding, prefix tokens, position embedding and CLIP's LayerNorm),
                                then each block's output */
    vit_tensor *grad_tokens; /* [out] depth + 1 tensors (B, T, C): d target / d tokens */
    vit_tensor *grad_input;  /* [out] one tensor (B, in_channels, H, W): d target / d x */
} vit_reverse;

/* Options for loading; all zero means the defaults. Only a ViT file without
   vit.h metadata (a timm, transformers or torchvision checkpoint) reads a
   config.json or needs `heads`; labels apply to any ViT classifier. */
typedef struct vit_load_opts {
    int32_t heads;             /* > 0: attention heads, over config.json and the standard sizes */
    const char *config_path;   /* a transformers or timm config.json; NULL: the one beside the file, if any */
    const char *labels_path;   /* class names, one per line; over config.json's and the file's */
    const char *config_text;   /* config.json's bytes instead of a path (config_size of them) */
    size_t config_size;        /* bytes of config_text */
    const char *labels_text;   /* label lines' bytes instead of a path (labels_size of them) */
    size_t labels_size;        /* bytes of labels_text */
    int32_t no_config_search;  /* 1: never look for config.json beside the file */
    int32_t read_whole;        /* 1: read the file into memory rather than map it (see LIMITATIONS) */
    int32_t allow_nonfinite;   /* 1: load weights holding NaN or Inf (refused by default, see WEIGHTS FORMAT) */
    int32_t keep_layout;       /* 1: dense weights stay as the file lays them out, not packed at load (see
                                  WEIGHTS FORMAT): a faster load, pages shared, slower products */
} vit_load_opts;

/* ---- core: version, errors, log ---- */

VITDEF const char *vit_version(void);
VITDEF const char *vit_result_string(vit_result r);
/* The calling thread's message for the last failure ("" if none). */
VITDEF const char *vit_last_error(void);
typedef void (*vit_log_fn)(void *user, const char *msg);
/* Optional: receive informational messages. Call before other threads start. */
VITDEF void vit_set_log(vit_log_fn fn, void *user);
/* Threads for the parallel loops of the forward passes (and kernels) the
   calling thread starts: n in 1..VIT_MAX_THREADS, else VIT_ERR_ARG and
   nothing changes. In a build without threads a valid n is accepted and
   has no effect. */
VITDEF vit_result vit_set_threads(int n);
/* The threads such a forward pass would use: the calling thread's last
   vit_set_threads, else OMP_NUM_THREADS when it is a count in range, else
   the processors online; 1 in a build without threads. */
VITDEF int vit_get_threads(void);

/* ---- arena ---- */

/* Wrap a caller-owned buffer; buf == NULL makes a counting arena. */
VITDEF void vit_arena_init(vit_arena *a, void *buf, size_t size);
/* One VIT_MALLOC of `size` bytes, aligned to VIT_ALIGN. */
VITDEF vit_result vit_arena_init_alloc(vit_arena *a, size_t size);
/* `bytes` aligned to VIT_ALIGN, or NULL with VIT_ERR_OOM set. A counting
   arena returns a non-NULL pointer that must never be dereferenced. */
VITDEF void *vit_arena_alloc(vit_arena *a, size_t bytes);
VITDEF int vit_arena_counting(const vit_arena *a);
VITDEF size_t vit_arena_mark(const vit_arena *a);
VITDEF void vit_arena_rewind(vit_arena *a, size_t mark);
VITDEF void vit_arena_reset(vit_arena *a);
VITDEF void vit_arena_free(vit_arena *a);

/* ---- tensor ---- */

/* t gets ndim dims from shape[] and uninitialised storage from a.
   Fails with VIT_ERR_OVERFLOW/ARG on bad dims, VIT_ERR_OOM when full. */
VITDEF vit_result vit_tensor_init(vit_arena *a, vit_tensor *t, int32_t ndim, const int32_t *shape);
VITDEF size_t vit_tensor_numel(const vit_tensor *t);
/* A view of index i along the outermost dimension. A bad view (t NULL or
   of fewer than 2 dimensions, i outside 0..shape[0]-1) is an empty tensor:
   data NULL and ndim 0, which every function refuses. */
VITDEF vit_tensor vit_tensor_view(const vit_tensor *t, int32_t i);
/* Writes "[2,3,4]" into buf (always terminated). */
VITDEF const char *vit_tensor_shape_str(const vit_tensor *t, char *buf, size_t n);

/* ---- kernels ---- */
/* Raw pointers; no allocation, no error codes. Output first, then inputs,
   then sizes. In-place (y == x) is allowed where noted. */

/* y (M, N) = x (M, K) . w (N, K)^T + b (N); b may be NULL. nn.Linear layout. */
VITDEF void vit_k_matmul(float *y, const float *x, const float *w, const float *b, int M, int K, int N);
VITDEF void vit_k_matmul_ref(float *y, const float *x, const float *w, const float *b, int M, int K, int N);
/* Row softmax of x (rows, n) into y; in place allowed. Subtracts the row max. */
VITDEF void vit_k_softmax(float *y, const float *x, int rows, int n);
VITDEF void vit_k_softmax_ref(float *y, const float *x, int rows, int n);
/* LayerNorm over the last dim of x (rows, C) with w, b (C); in place allowed. */
VITDEF void vit_k_layernorm(float *y, const float *x, const float *w, const float *b, int rows, int C, float eps);
VITDEF void vit_k_layernorm_ref(float *y, const float *x, const float *w, const float *b, int rows, int C, float eps);
/* Elementwise on n values; in place allowed. GELU is the exact erf form. */
VITDEF void vit_k_gelu(float *y, const float *x, int n);
VITDEF void vit_k_gelu_ref(float *y, const float *x, int n);
VITDEF void vit_k_relu(float *y, const float *x, int n);
VITDEF void vit_k_relu_ref(float *y, const float *x, int n);
VITDEF void vit_k_sigmoid(float *y, const float *x, int n);
VITDEF void vit_k_sigmoid_ref(float *y, const float *x, int n);
VITDEF void vit_k_tanh(float *y, const float *x, int n);
VITDEF void vit_k_tanh_ref(float *y, const float *x, int n);
/* Any vit_act on n values; in place allowed. */
VITDEF void vit_k_act(float *y, const float *x, int n, vit_act act);
VITDEF void vit_k_act_ref(float *y, const float *x, int n, vit_act act);
/* Gated linear unit (SwiGLU with SILU): y (rows, H) = act(x[:, :H]) *
   x[:, H:] for x (rows, 2H), the halves as torch.chunk(2) gives them. */
VITDEF void vit_k_glu(float *y, const float *x, int rows, int H, vit_act act);
VITDEF void vit_k_glu_ref(float *y, const float *x, int rows, int H, vit_act act);
/* y = a + b, n values; y may alias a or b. */
VITDEF void vit_k_add(float *y, const float *a, const float *b, int n);
VITDEF void vit_k_add_ref(float *y, const float *a, const float *b, int n);
/* Convolution with kernel = stride = P, no padding, as patch tokens, the
   sizes in sh (vit_patch_shape): y (B, (H/P)*(W/P), D) = conv(x (B, C, H,
   W), w (D, C, P, P)) + b (D). The fast version needs cols: scratch of
   B*(H/P)*(W/P)*C*P*P floats. */
VITDEF void vit_k_patch_conv(float *y, float *cols, const float *x, const float *w, const float *b,
                             const vit_patch_shape *sh);
VITDEF void vit_k_patch_conv_ref(float *y, const float *x, const float *w, const float *b, const vit_patch_shape *sh);
/* Multi-head attention core, sizes in s (vit_attn_shape).
   q, k, v: (B, N, ld) with head h in columns [h*HS, (h+1)*HS).
   out (B, N, NH*HS); att (B, NH, N, N) receives the probabilities.
   Scores are scale * q.k; probabilities are softmax(scores) * post.
   att must not be NULL (the modules call an internal twin that can keep
   only one tile of scores per thread). The fast version needs vt: scratch
   of B*NH*HS*N floats. */
VITDEF void vit_k_attention(float *out, float *att, float *vt, const float *q, const float *k, const float *v,
                            const vit_attn_shape *s);
VITDEF void vit_k_attention_ref(float *out, float *att, const float *q, const float *k, const float *v,
                                const vit_attn_shape *s);
/* A relative position bias added to one head's attention scores, as
   BEiT adds it before the softmax: s (rows, n) += tab[idx[r*n + j]], with
   tab (R) the head's bias table and idx (rows, n) holding indices in
   [0, R). Same bits as the reference (one add per score). */
VITDEF void vit_k_relpos_add(float *s, const float *tab, const int32_t *idx, int rows, int n);
VITDEF void vit_k_relpos_add_ref(float *s, const float *tab, const int32_t *idx, int rows, int n);
/* Rotary position embedding in place, interleaved pairs (timm's
   apply_rot_embed_cat, EVA-02): x (rows, ld) holds NH heads of HS (even)
   from column 0; row r's pair j of every head, (a, b) = (x[2j], x[2j+1]),
   becomes (a c - b s, b c + a s) with c, s the cosine and sine of its
   angle. cs (rows, 2, HS) gives them as timm lays them out: per row, C =
   [c0, c0, c1, c1, ...] then S = [-s0, s0, -s1, s1, ...]. The fast
   version computes x C + swap(x) S with one rounding less (an FMA): within
   an ulp or two of the reference. */
VITDEF void vit_k_rope(float *x, const float *cs, int rows, int NH, int HS, int ld);
VITDEF void vit_k_rope_ref(float *x, const float *cs, int rows, int NH, int HS, int ld);
/* The same with pairs in halves (timm's rotate_half, DINOv3): pair j is
   (x[j], x[j + HS/2]); cs per row: C = [c0, c1, ..., c0, c1, ...], S =
   [-s0, -s1, ..., s0, s1, ...]. */
VITDEF void vit_k_rope_half(float *x, const float *cs, int rows, int NH, int HS, int ld);
VITDEF void vit_k_rope_half_ref(float *x, const float *cs, int rows, int NH, int HS, int ld);
/* Row statistics of x (rows, n): mean[r], and the biased variance var[r]
   unless var is NULL. */
VITDEF void vit_k_rowstats(float *mean, float *var, const float *x, int rows, int n);
VITDEF void vit_k_rowstats_ref(float *mean, float *var, const float *x, int rows, int n);
/* y (rows, n) = x * a[r] + b[r] row by row, a and b (rows); b may be NULL.
   In place allowed. */
VITDEF void vit_k_rowaffine(float *y, const float *x, const float *a, const float *b, int rows, int n);
VITDEF void vit_k_rowaffine_ref(float *y, const float *x, const float *a, const float *b, int rows, int n);
/* y = a * b, n values; y may alias a or b. */
VITDEF void vit_k_mul(float *y, const float *a, const float *b, int n);
VITDEF void vit_k_mul_ref(float *y, const float *a, const float *b, int n);
/* 1x1 convolution, channels first: y (B, Cout, HW) = w (Cout, Cin) . x (B,
   Cin, HW) + b (Cout); b may be NULL; y must not alias x. */
VITDEF void vit_k_conv1x1(float *y, const float *x, const float *w, const float *b, int B, int Cin, int Cout, int HW);
VITDEF void vit_k_conv1x1_ref(float *y, const float *x, const float *w, const float *b, int B, int Cin, int Cout,
                              int HW);
/* Depth-wise K x K convolution, channels last, the sizes in sh
   (vit_conv_shape): y (B, Ho, Wo, C) from x (B, H, W, C), w (C, 1, K, K),
   b (C) or NULL; Ho = (H + 2 pad - K) / stride + 1. The fast version needs
   wt: scratch of K*K*C floats. */
VITDEF void vit_k_dwconv(float *y, float *wt, const float *x, const float *w, const float *b,
                         const vit_conv_shape *sh);
VITDEF void vit_k_dwconv_ref(float *y, const float *x, const float *w, const float *b, const vit_conv_shape *sh);
/* Average pooling with kernel = stride = S in ceil mode, channels last:
   y (B, ceil(H/S), ceil(W/S), C); a window cut by the border averages the
   pixels it covers (AvgPool2d(S, S, ceil_mode=True)). */
VITDEF void vit_k_avgpool(float *y, const float *x, int B, int H, int W, int C, int S);
VITDEF void vit_k_avgpool_ref(float *y, const float *x, int B, int H, int W, int C, int S);
/* Attention scores per head, the sizes in sh (vit_heads_shape): s (B, NH,
   Nq, Nk) = scale * q . k, with q (B, Nq, ldq) and k (B, Nk, ldk) holding
   head h in columns [h*HS, (h+1)*HS). */
VITDEF void vit_k_scores(float *s, const float *q, const float *k, const vit_heads_shape *sh);
VITDEF void vit_k_scores_ref(float *s, const float *q, const float *k, const vit_heads_shape *sh);
/* Weights times values per head, the sizes in sh (vit_heads_shape; ldq,
   ldk and scale unused): out (B, Nq, NH*HS) = p (B, NH, Nq, Nk) . v (B, Nk,
   ldv), head h of v in columns [h*HS, (h+1)*HS). vt is unused since 0.5.2
   (v is read where it lies) and may be NULL. */
VITDEF void vit_k_attend(float *out, float *vt, const float *p, const float *v, const vit_heads_shape *sh);
VITDEF void vit_k_attend_ref(float *out, const float *p, const float *v, const vit_heads_shape *sh);
/* AFT-full/local core for B sequences of T steps and D features, the sizes
   in sh (vit_aft_shape), q, k, v, y (B, T, D): y = sigmoid(q) * sum_t'
   e^(w[t][t'] + k[t']) v[t'] / sum_t' e^(w[t][t'] + k[t']), w (T, T) with
   row stride ldw, where w[t][t'] counts only for |t - t'| < s and is 0
   elsewhere (AFT-full: s >= T). att, optional, receives the (B, D, T, T)
   weights. The fast version needs scratch of T*T + 4*T*D + D floats. */
VITDEF void vit_k_aft(float *y, float *att, float *scratch, const float *q, const float *k, const float *v,
                      const float *w, const vit_aft_shape *sh);
VITDEF void vit_k_aft_ref(float *y, float *att, const float *q, const float *k, const float *v, const float *w,
                          const vit_aft_shape *sh);
/* AFT-simple (w = 0): y = sigmoid(q) * sum_t' softmax_t'(k)[t'] v[t'];
   att, optional, receives the (B, D, T) softmax over tokens. */
VITDEF void vit_k_aft_simple(float *y, float *att, const float *q, const float *k, const float *v, int B, int T, int D);
VITDEF void vit_k_aft_simple_ref(float *y, float *att, const float *q, const float *k, const float *v, int B, int T,
                                 int D);
/* Outlook attention core for B images of H x W pixels, the sizes in p:
   C = dim channels, NH heads of HS = C/NH, K x K windows (K = kernel_size)
   at L = Lh*Lw unfold positions (Lh = (H + 2 padding - K) / stride + 1).
   logits (B, L, NH, K^2, K^2) and v (B, H, W, C) in; att (B, NH, L, K^2,
   K^2) = softmax(scale * logits) over the last dim (p->scale, 0: HS^-0.5);
   y (B, H, W, C) = fold(att . unfold(v)), overlapping windows summed,
   padding dropped. */
VITDEF void vit_k_outlook(float *y, float *att, const float *logits, const float *v, int B, int H, int W,
                          const vit_outlook_params *p);
VITDEF void vit_k_outlook_ref(float *y, float *att, const float *logits, const float *v, int B, int H, int W,
                              const vit_outlook_params *p);

/* Reverse-pass kernels (vit_model_reverse): each takes the gradient dy of
   a forward kernel's output and gives the gradient of its input (never of
   its weights: explanations need only the activations'). */
/* LayerNorm (vit_k_layernorm) reversed: dx (rows, C) += the gradient
   through LayerNorm(x) with weight w, given dy; it accumulates, since
   every LayerNorm of a ViT sits on a residual. */
VITDEF void vit_k_layernorm_back(float *dx, const float *x, const float *w, const float *dy, int rows, int C,
                                 float eps);
VITDEF void vit_k_layernorm_back_ref(float *dx, const float *x, const float *w, const float *dy, int rows, int C,
                                     float eps);
/* dx (n) = dy * act'(x), x the activation's input; dx may alias dy. */
VITDEF void vit_k_act_back(float *dx, const float *x, const float *dy, int n, vit_act act);
VITDEF void vit_k_act_back_ref(float *dx, const float *x, const float *dy, int n, vit_act act);
/* vit_k_glu reversed: dx (rows, 2H) from its input x (rows, 2H) and dy
   (rows, H): the gate's half dy * x[H:] * act'(x[:H]), the values' dy *
   act(x[:H]). */
VITDEF void vit_k_glu_back(float *dx, const float *x, const float *dy, int rows, int H, vit_act act);
VITDEF void vit_k_glu_back_ref(float *dx, const float *x, const float *dy, int rows, int H, vit_act act);
/* Row softmax reversed: dx (rows, n) = y * (dy - sum(y dy)) from the
   softmax's output y; dx may alias dy. */
VITDEF void vit_k_softmax_back(float *dx, const float *y, const float *dy, int rows, int n);
VITDEF void vit_k_softmax_back_ref(float *dx, const float *y, const float *dy, int rows, int n);
/* vit_k_attention reversed, sizes in s: from dout (B, N, NH*HS), the
   forward's q, k, v (B, N, ld) and probabilities att (B, NH, N, N), the
   gradients dq, dk, dv (B, N, ld; head h in its columns [h*HS, (h+1)*HS),
   the other columns untouched) and, unless datt is NULL, datt (B, NH, N,
   N) = the gradient with respect to att. The fast version needs scratch of
   B*NH*(N*N + 3*HS*N) floats. */
VITDEF void vit_k_attention_back(float *dq, float *dk, float *dv, float *datt, float *scratch, const float *dout,
                                 const float *q, const float *k, const float *v, const float *att,
                                 const vit_attn_shape *s);
VITDEF void vit_k_attention_back_ref(float *dq, float *dk, float *dv, float *datt, const float *dout, const float *q,
                                     const float *k, const float *v, const float *att, const vit_attn_shape *s);
/* vit_k_patch_conv reversed: dx (B, C, H, W) from dy (B, (H/P)*(W/P), D)
   and w (D, C, P, P); pixels past the last whole patch get 0. The fast
   version needs cols: scratch of B*(H/P)*(W/P)*C*P*P floats. */
VITDEF void vit_k_patch_conv_back(float *dx, float *cols, const float *dy, const float *w, const vit_patch_shape *sh);
VITDEF void vit_k_patch_conv_back_ref(float *dx, const float *dy, const float *w, const vit_patch_shape *sh);

/* ---- modules ---- */
/* Each takes its output (and scratch) from arena a, checks shapes and
   params first, and with a counting arena only sizes itself. Each returns
   VIT_ERR_ARG for unset params or weights, VIT_ERR_SHAPE for an input its
   PyTorch class would not take. `attn`, when not NULL, receives the
   module's attention map or gates, from a like out (NULL: not kept). */

/* Scaled dot-product attention: (B, N, C) -> (B, N, C); attn (B, N, N). */
VITDEF vit_result vit_sdpa_forward(vit_arena *a, const vit_sdpa_params *p, const vit_tensor *x, vit_tensor *out,
                                   vit_tensor *attn);
/* Multi-head self-attention: (B, N, C) -> (B, N, C); attn (B, NH, N, N). */
VITDEF vit_result vit_mha_forward(vit_arena *a, const vit_mha_params *p, const vit_mha_weights *w, const vit_tensor *x,
                                  vit_tensor *out, vit_tensor *attn);
/* MLP: (..., in_dim) -> (..., out_dim); attn unused (may be NULL). */
VITDEF vit_result vit_mlp_forward(vit_arena *a, const vit_mlp_params *p, const vit_mlp_weights *w, const vit_tensor *x,
                                  vit_tensor *out, vit_tensor *attn);
/* Encoder block: (B, N, C) -> (B, N, C); attn (B, NH, N, N). */
VITDEF vit_result vit_block_forward(vit_arena *a, const vit_block_params *p, const vit_block_weights *w,
                                    const vit_tensor *x, vit_tensor *out, vit_tensor *attn);
/* Patch embedding: (B, Cin, H, W) -> (B, tokens, C); attn unused. */
VITDEF vit_result vit_patch_forward(vit_arena *a, const vit_patch_params *p, const vit_patch_weights *w,
                                    const vit_tensor *x, vit_tensor *out, vit_tensor *attn);
/* Squeeze-excitation: (B, C, H, W) -> (B, C, H, W); attn: the gates (B, C). */
VITDEF vit_result vit_se_forward(vit_arena *a, const vit_se_params *p, const vit_se_weights *w, const vit_tensor *x,
                                 vit_tensor *out, vit_tensor *attn);
/* One-head self-attention: (B, N, C) -> (B, N, C); attn (B, N, N). */
VITDEF vit_result vit_sdsa_forward(vit_arena *a, const vit_sdsa_params *p, const vit_sdsa_weights *w,
                                   const vit_tensor *x, vit_tensor *out, vit_tensor *attn);
/* Patch-sequence classifier: (B, seq_len, dim) -> (B, num_classes) logits;
   attn (B, N, N). */
VITDEF vit_result vit_sdsa_classifier_forward(vit_arena *a, const vit_sdsa_classifier_params *p,
                                              const vit_sdsa_classifier_weights *w, const vit_tensor *x,
                                              vit_tensor *out, vit_tensor *attn);
/* EMSA: (B, N, C) -> (B, N, C), N = H*W when ratio > 1; attn (B, NH, N, N'). */
VITDEF vit_result vit_emsa_forward(vit_arena *a, const vit_emsa_params *p, const vit_emsa_weights *w,
                                   const vit_tensor *x, vit_tensor *out, vit_tensor *attn);
/* Shuffle attention: (B, C, H, W) -> (B, C, H, W), C % 2G == 0 (else
   VIT_ERR_ARG). attn, when not NULL, is two tensors: attn[0] the (B, C/2)
   gates of the channel halves, attn[1] the (B, C/2, H, W) gates of the
   spatial halves, in channel order before the final shuffle (index
   g*C/(2G) + c for group g). */
VITDEF vit_result vit_shuffle_forward(vit_arena *a, const vit_shuffle_params *p, const vit_shuffle_weights *w,
                                      const vit_tensor *x, vit_tensor *out, vit_tensor *attn);
/* SGE: (B, C, H, W) -> (B, C, H, W), C % G == 0, H*W >= 2; attn: the
   (B, G, H, W) sigmoid gates. */
VITDEF vit_result vit_sge_forward(vit_arena *a, const vit_sge_params *p, const vit_sge_weights *w, const vit_tensor *x,
                                  vit_tensor *out, vit_tensor *attn);
/* AFT: (B, T, D) -> (B, T, D), T <= max_seqlen for full and local; attn:
   the weights per feature, (B, HD, T, T), simple (B, HD, 1, T). */
VITDEF vit_result vit_aft_forward(vit_arena *a, const vit_aft_params *p, const vit_aft_weights *w, const vit_tensor *x,
                                  vit_tensor *out, vit_tensor *attn);
/* Outlook attention: (B, H, W, C) -> (B, H, W, C); attn (B, NH, L, K^2*K^2):
   per window, the (K^2, K^2) attention row-major; L windows. */
VITDEF vit_result vit_outlook_forward(vit_arena *a, const vit_outlook_params *p, const vit_outlook_weights *w,
                                      const vit_tensor *x, vit_tensor *out, vit_tensor *attn);

/* ---- model ---- */

/* Load a safetensors file: one written by tools/export.py (any kind), or a
   ViT checkpoint in torchvision, timm or transformers naming (see WEIGHTS
   FORMAT). On failure m is zeroed and vit_last_error() names the problem.
   Same as vit_model_load_file_ex(m, path, NULL). */
#ifndef VIT_NO_STDIO
VITDEF vit_result vit_model_load_file(vit_model *m, const char *path);
#endif
/* Same from memory. F32 tensors are used in place: `data` must outlive m. */
VITDEF vit_result vit_model_load_memory(vit_model *m, const void *data, size_t size);
/* With options (opts may be NULL): heads, config.json and labels for
   checkpoints without vit.h metadata. Fails with VIT_ERR_MISSING when the
   heads cannot be known, VIT_ERR_FORMAT when config.json or the labels
   contradict the weights, VIT_ERR_ARG for a config.json given with a file
   that has vit.h metadata, VIT_ERR_IO for an unreadable config or labels
   file. From memory nothing is looked for beside a file, and under
   VIT_NO_STDIO the _path options are refused. */
VITDEF vit_result vit_model_load_memory_ex(vit_model *m, const void *data, size_t size, const vit_load_opts *opts);
#ifndef VIT_NO_STDIO
VITDEF vit_result vit_model_load_file_ex(vit_model *m, const char *path, const vit_load_opts *opts);
#endif
/* The name of class k of a ViT classifier, or NULL when k is out of range
   or no labels are known. Labels come from vit_load_opts, else a config.json
   (transformers' id2label, timm's label_names), else the file's "labels"
   metadata (comma-separated). They live as long as m. */
VITDEF const char *vit_model_label(const vit_model *m, int32_t k);
VITDEF void vit_model_free(vit_model *m);
/* Run whatever m holds on x. ViT: x (B, in_channels, H, W) -> out (B,
   num_classes) or (B, C) with opts->features. Modules: see the module.
   out lives in act until act is rewound. opts may be NULL. */
VITDEF vit_result vit_model_forward(const vit_model *m, vit_arena *act, const vit_tensor *x,
                                    const vit_forward_opts *opts, vit_tensor *out);
/* Bytes an activation arena needs for vit_model_forward on x's shape.
   Both refuse a model that is not loaded (VIT_ERR_ARG) and an input of a
   bad rank or a dimension below 1 (VIT_ERR_SHAPE); forward also refuses a
   counting arena (VIT_ERR_ARG). */
VITDEF vit_result vit_model_memory(const vit_model *m, const vit_tensor *x, const vit_forward_opts *opts,
                                   size_t *act_bytes);
/* The tokens a ViT puts before its patches (class, distillation,
   registers; 0 for another kind): every token output and attention map
   over (B, T, C) tokens holds the patch grid from this index on, and
   vit_map_cls and vit_map_rollout, which leave the class token out, from
   this index minus 1. */
VITDEF int32_t vit_model_prefix_tokens(const vit_model *m);
/* The kind's name as files write it ("vit", "mha", ...); "unknown" if none. */
VITDEF const char *vit_kind_name(vit_kind k);
/* The input shape m takes for a batch of B, into *ndim and shape. The
   sizes the kind leaves free get n (tokens N, or height H) and w (width W;
   sdpa: channels C), fitted to what it allows (AFT's T <= max_seqlen; SGE
   gets 2 * groups channels). VIT_ERR_ARG for B, n or w below 1. */
VITDEF vit_result vit_model_input_shape(const vit_model *m, int32_t B, int32_t n, int32_t w, int32_t *ndim,
                                        int32_t shape[VIT_MAX_DIMS]);
/* What m is, as lines of text: kind and naming, every hyperparameter under
   the metadata key a file gives it, what it computes, the input it takes.
   Writes at most size bytes, always terminated; returns the length of the
   whole text (as snprintf does). */
VITDEF size_t vit_model_describe(const vit_model *m, char *buf, size_t size);
/* The value of `key` in the file's __metadata__ (e.g. "labels"), or NULL. */
VITDEF const char *vit_model_meta(const vit_model *m, const char *key);
/* How a position embedding's grid is resized, as each library does it
   (class token untouched, bicubic in every case):
   TORCHVISION  interpolate_embeddings: align_corners=True, Keys a = -0.75
   TIMM         resample_abs_pos_embed (what timm does when a checkpoint
                meets another img_size): align_corners=False,
                antialias=True, i.e. PIL's bicubic, a = -0.5, filter
                stretched by the shrink factor, taps renormalised
   HF           transformers' ViTEmbeddings.interpolate_pos_encoding
                (size= form, transformers >= 4.4x): align_corners=False,
                a = -0.75
   AUTO         by the file's naming: timm -> TIMM, transformers -> HF,
                anything else -> TORCHVISION. */
typedef enum vit_pos_resize { VIT_POS_AUTO = 0, VIT_POS_TORCHVISION, VIT_POS_TIMM, VIT_POS_HF } vit_pos_resize;
/* Resizes a ViT's position embedding for image_size x image_size inputs,
   the way `how` says (vit_model_set_image_size: VIT_POS_AUTO). */
VITDEF vit_result vit_model_set_image_size(vit_model *m, int32_t image_size);
VITDEF vit_result vit_model_set_image_size_ex(vit_model *m, int32_t image_size, vit_pos_resize how);
/* The reverse pass of a ViT with F32 weights on x (B, in_channels, H, W):
   a forward that keeps what the chain rule reads, then the gradient of
   sum(out * rv->seed) back through the head, pool, final LayerNorm, every
   block and the patch embedding, into rv's tables. Attention maps for a
   class come from it (vit_explain). VIT_ERR_SHAPE for a seed that is not
   (B, W); VIT_ERR_UNSUPPORTED for another kind, or BF16/I8 weights (the
   gradient of a quantised forward is not an F32 reverse pass's);
   VIT_ERR_NONFINITE for NaN or Inf in x or the seed. On failure act is
   rewound and rv is untouched. */
VITDEF vit_result vit_model_reverse(const vit_model *m, vit_arena *act, const vit_tensor *x, vit_reverse *rv);
/* Bytes an activation arena needs for vit_model_reverse with rv's
   requests (rv's tables are not written): the kept activations, its
   scratch and the outputs. */
VITDEF vit_result vit_model_reverse_memory(const vit_model *m, const vit_tensor *x, const vit_reverse *rv,
                                           size_t *act_bytes);


/* ---- maps: attention maps and rollout ---- */

typedef enum vit_fusion { VIT_FUSE_MEAN = 0, VIT_FUSE_MAX, VIT_FUSE_MIN } vit_fusion;

typedef struct vit_rollout_params {
    vit_fusion fusion;      /* how heads are combined in each layer */
    float discard_ratio;    /* 0..1: fraction of the lowest fused weights set to 0 */
    int32_t explain_compat; /* 1: divide by sums as vit-explain's a / a.sum(-1) broadcasts */
} vit_rollout_params;

/* The class token's attention to the other T-1 tokens in one layer's
   probabilities att (B, NH, T, T), for batch item b: one head (head >= 0) or
   all heads fused (head < 0). out: T-1 floats. */
VITDEF vit_result vit_map_cls(const vit_tensor *att, int32_t b, int32_t head, vit_fusion f, float *out);
/* Attention rollout (Abnar & Zuidema 2020) through `depth` layers' att
   tensors for batch item b: per layer fuse heads, drop the lowest
   discard_ratio of the weights (never the class token's own), take
   (A + I)/2 with rows renormalised, multiply through the layers; out gets
   the class token's row over the T-1 patches, divided by its max. Scratch
   comes from a and is released. The number dropped of the T*T weights is
   vit-explain's int(T*T * discard_ratio) in double, the float ratio read
   as the shortest decimal that gives it back (0.78f as 0.78): the same
   count as vit-explain called with that decimal, at any ratio and grid. */
VITDEF vit_result vit_map_rollout(vit_arena *a, const vit_tensor *att, int32_t depth, int32_t b,
                                  const vit_rollout_params *p, float *out);

/* Explanations: maps for one class (or one direction of a model's
   features), from a reverse pass, each as its authors' code computes it:
   ROLLOUT       vit-explain's VITAttentionRollout (heads' mean; not
                 class-specific), for comparison
   GRAD_ROLLOUT  vit-explain's VITAttentionGradRollout
   CHEFER        Chefer et al. 2021, "Generic Attention-model
                 Explainability": R += mean_h((grad att)+) R
   LEGRAD        LeGrad (Bousselham et al. 2024, as torch-cam has it):
                 each block's output through the final norm and head, the
                 gradient of that score at the block's own probabilities
   GRADCAM       Grad-CAM on the last block's first LayerNorm (as
                 pytorch-grad-cam's ViT tutorial)
   SALIENCY      max over channels of |d target / d x| (Simonyan et al.)
   GXI           gradient times input, summed over channels
   IG            integrated gradients (Sundararajan et al. 2017)
   The token maps (the first five) are G x G over the patches: each reads
   the class token's row where the model has one, else the mean of every
   token's row (a GAP or attention-pooled model); the pixel maps are H x W.
   ROLLOUT and GRAD_ROLLOUT are divided by their maximum (vit-explain
   returns only that; a map that is all zero stays so, where vit-explain's
   0 / 0 gives NaN), the others are raw. */
typedef enum vit_method {
    VIT_METHOD_ROLLOUT = 0,
    VIT_METHOD_GRAD_ROLLOUT,
    VIT_METHOD_CHEFER,
    VIT_METHOD_LEGRAD,
    VIT_METHOD_GRADCAM,
    VIT_METHOD_SALIENCY,
    VIT_METHOD_GXI,
    VIT_METHOD_IG,
    VIT_METHOD_COUNT
} vit_method;

/* All zero: vit-explain's layer pairing fixed, no discarding, 16 steps. */
typedef struct vit_explain_params {
    float discard_ratio;      /* rollouts: the fraction of each layer's lowest weights set to 0 (vit-explain: 0.9) */
    int32_t paper_pairing;    /* grad rollout: 1 pairs layer l's attention with layer depth-1-l's gradient, as
                                 vit-explain's hooks do (its issue #6); 0 with its own */
    int32_t ig_steps;         /* integrated gradients: midpoints on the path (0: 16), four a batch */
    const float *ig_baseline; /* integrated gradients: the path's start (in_channels * H * W), NULL: black */
    int32_t features;         /* 1: explain the representation (seed over its C values), not the logits */
} vit_explain_params;

/* The method's name as the CLI spells it ("grad-rollout"). */
VITDEF const char *vit_method_name(vit_method method);
/* Floats of a method's map for m: G*G or H*W; 0 for a model that is not a ViT. */
VITDEF int32_t vit_explain_size(const vit_model *m, vit_method method);
/* Width W of vit_model_forward's output (logits, or the representation
   with features or a model without a head): the length of a seed. */
VITDEF int32_t vit_model_output_width(const vit_model *m, int32_t features);
/* The map of `method` for x (1, in_channels, H, W) into out
   (vit_explain_size floats): for class cls, or when seed is not NULL for
   the direction seed (vit_model_output_width floats: the target is
   sum(out * seed)). Scratch comes from act and is released. F32 ViTs
   only, as vit_model_reverse; VIT_ERR_ARG for a class out of range. */
VITDEF vit_result vit_explain(const vit_model *m, vit_arena *act, const vit_tensor *x, vit_method method, int32_t cls,
                              const float *seed, const vit_explain_params *p, float *out);
/* Bytes act needs for vit_explain on x's shape. */
VITDEF vit_result vit_explain_memory(const vit_model *m, const vit_tensor *x, vit_method method,
                                     const vit_explain_params *p, size_t *act_bytes);

/* ---- I/O: npy ---- */

/* float32 C-order .npy (versions 1-3; float64 is narrowed) into a tensor
   from a. The header is checked as numpy checks it and against the file's
   size before anything else is read or allocated; from a file, the data
   goes straight into the tensor. With a counting arena only the header is
   read: t gets the shape (its data is not to be dereferenced), so a caller
   can check the shape before paying for the data. */
VITDEF vit_result vit_npy_load_memory(vit_arena *a, const void *data, size_t size, vit_tensor *t);
#ifndef VIT_NO_STDIO
VITDEF vit_result vit_npy_load(vit_arena *a, const char *path, vit_tensor *t);
/* t as a float32 .npy, written atomically (see ERRORS). */
VITDEF vit_result vit_npy_save(const char *path, const vit_tensor *t);
#endif

/* ---- I/O: images ---- */

/* PIL's antialiased resampling filters (torchvision and timm resize PIL
   images with them): BILINEAR the triangle, BICUBIC Keys' cubic a = -0.5,
   both stretched by the shrink factor. */
typedef enum vit_resample { VIT_RESAMPLE_BILINEAR = 0, VIT_RESAMPLE_BICUBIC = 1 } vit_resample;

typedef struct vit_preprocess {
    int32_t resize;   /* short side after resizing (squash: both sides); 0: 256 (torchvision's ViT weights) */
    int32_t crop;     /* centre crop; 0: 224 */
    float mean[3];    /* per channel; all 0 with std all 0: ImageNet's 0.485 0.456 0.406
                         (all 0 with std given: no shift, for pixel units) */
    float std[3];     /* per channel; all 0: ImageNet's 0.229 0.224 0.225 (mean kept if given) */
    vit_resample resample; /* the resize's filter; 0: bilinear */
    int32_t squash;   /* 1: both sides to `resize`, the aspect not kept (timm's crop_mode 'squash',
                         transformers' size {height, width}: SigLIP) */
    int32_t crop_floor; /* 1: the crop's offset (resized - crop) / 2 rounds down (transformers'
                           center_crop); 0: to the nearest, halves to even (torchvision's) */
} vit_preprocess;

/* Decodes PNG, JPEG (baseline, progressive), BMP and binary PPM/PGM into a
   (C, H, W) float tensor in [0, 1]: channels 3 gives RGB (grey
   replicated, alpha dropped, as PIL's convert("RGB")), 1 gives luminance.
   Safe on untrusted files (see LIMITATIONS): a truncated or inconsistent
   file is refused with VIT_ERR_FORMAT and the problem named ("truncated
   BMP: ..."); other formats (GIF, TGA, ...), 16-bit PNM, run-length BMP
   and lossless or arithmetic JPEG with VIT_ERR_UNSUPPORTED or
   VIT_ERR_FORMAT and the formats that are read. stb_image decodes with
   VIT_MALLOC/VIT_FREE. */
#ifndef VIT_NO_IMAGE
VITDEF vit_result vit_image_load_memory(vit_arena *a, const void *data, size_t size, int32_t channels, vit_tensor *img);
#ifndef VIT_NO_STDIO
VITDEF vit_result vit_image_load(vit_arena *a, const char *path, int32_t channels, vit_tensor *img);
#endif
#endif
/* torchvision's ImageClassification transform (and timm's eval transform):
   resize the short side (or both, squash) with PIL's antialiased bilinear
   or bicubic filter, centre crop, normalise. img (C, H, W) -> out (1, C,
   crop, crop). */
VITDEF vit_result vit_image_preprocess(vit_arena *a, const vit_tensor *img, const vit_preprocess *p, vit_tensor *out);
/* The preprocessing a ViT's files ask for (the metadata vit.h writes, or
   what the loader read from timm's pretrained_cfg and transformers'
   preprocessor_config.json), into *p:
     mean, std   input_mean and input_std (one or C numbers each), else
                 ImageNet's
     crop        input_crop, else the model's image size; a crop that is not
                 the image size (transformers' DINOv2: 224 for 518) is
                 what the model expects after vit_model_set_image_size
     resize      input_resize, else floor(crop / input_crop_pct) (timm),
                 else the crop when the file has its own mean (a model
                 trained here), else crop * 256 / 224 (torchvision's ViTs)
     resample    input_interpolation: bilinear (default) or bicubic
     squash      input_crop_mode: center (default) or squash
     crop_floor  input_crop_offset: round (default) or floor
   VIT_ERR_FORMAT names a malformed key, VIT_ERR_UNSUPPORTED a filter or
   crop mode vit_image_preprocess does not have, VIT_ERR_ARG a model that
   is not a ViT. */
VITDEF vit_result vit_model_preprocess(const vit_model *m, vit_preprocess *p);

/* ---- I/O: PNG ---- */

/* Viridis colour of v in [0, 1] (clamped). */
VITDEF void vit_colormap(float v, unsigned char rgb[3]);
#if !defined(VIT_NO_STDIO) && !defined(VIT_NO_PNG)
/* Each writes its PNG atomically (see ERRORS): VIT_ERR_IO on a failed write.
   map (gh, gw), min-max normalised, as a viridis PNG of (gh*scale, gw*scale)
   pixels, bilinearly upsampled. */
VITDEF vit_result vit_png_heatmap(const char *path, const float *map, int32_t gh, int32_t gw, int32_t scale);
/* map (gh, gw) upsampled bilinearly to the image's (H, W), coloured with
   viridis and blended over image (C = 1 or 3, H, W; values in [0, 1]) with
   opacity alpha. */
VITDEF vit_result vit_png_overlay(const char *path, const vit_tensor *image, const float *map, int32_t gh, int32_t gw,
                                  float alpha);
/* n maps (n, gh, gw), e.g. one per head, as a grid of `cols` columns, each
   cell an overlay on image (or a plain heatmap when image is NULL) of
   cell x cell pixels, 2-pixel white gaps. */
VITDEF vit_result vit_png_grid(const char *path, const vit_tensor *image, const float *maps, int32_t n, int32_t gh,
                               int32_t gw, int32_t cols, int32_t cell, float alpha);
/* The image alone (C = 1 or 3, H, W; values in [0, 1]). */
VITDEF vit_result vit_png_image(const char *path, const vit_tensor *image);
#endif

#ifdef __cplusplus
}
#endif
#endif /* VIT_H_INCLUDED */

/* ======================================================================== */
/*                            IMPLEMENTATION                                */
/* ======================================================================== */
#ifdef VIT_IMPLEMENTATION
#ifndef VIT_IMPLEMENTATION_INCLUDED
#define VIT_IMPLEMENTATION_INCLUDED

#include <math.h>
#include <float.h>
#include <string.h>
#include <stdarg.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>

#if defined(VIT_MALLOC) != defined(VIT_FREE)
#error "define both VIT_MALLOC and VIT_FREE, or neither"
#endif
#ifndef VIT_MALLOC
#define VIT_MALLOC(sz) malloc(sz)
#define VIT_FREE(p) free(p)
#endif
#ifndef VIT_ASSERT
#include <assert.h>
#define VIT_ASSERT(c) assert(c)
#endif

/* ---- SIMDe and threads setup ---- */

/* Warning settings for the implementation alone: pushed here and popped at
   its end, so the including file keeps its own (SIMDe's headers also leave
   some of theirs set, e.g. -Wunused-function off). The vector helpers are
   static, so the ABI warning GCC and clang give for passing vectors by
   value without -mavx does not apply. (GCC 12's one-line note "the ABI for
   passing parameters with 32-byte alignment has changed in GCC 4.6" on x86
   without -mavx is not a warning: no pragma reaches it; -mavx2 -mfma or
   -march=native, which the kernels want anyway, or -Wno-psabi do.) */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13 && defined(__cplusplus)
/* GCC 12's AVX-512 headers build _mm512_undefined_ps() from a self-
   initialised variable, which its C++ front end then reports (PR105593). */
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#ifndef VIT_NO_SIMD
#include <simde/x86/avx2.h>
#include <simde/x86/fma.h>
#if defined(SIMDE_X86_AVX512F_NATIVE) || defined(SIMDE_NO_NATIVE) || defined(__AVXVNNI__)
#include <simde/x86/avx512.h> /* and under SIMDE_NO_NATIVE or AVX-VNNI: the dot products' helpers */
#endif
#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
#include <simde/arm/neon/dot.h> /* sdot for I8 products */
#endif
#if !defined(VIT__MC_BYTES) && (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h> /* the L2's size (vit__mc_bytes) */
#endif
#endif
/* Threads: a pool of vit.h's own (private helpers: threads) on POSIX
   threads, or on Win32's with GCC or clang (MinGW, clang-cl). Under
   VIT_NO_THREADS, with other compilers and in WebAssembly built without
   -pthread every loop runs on the calling thread. OpenMP is not used:
   -fopenmp changes nothing. */
#if defined(VIT_NO_THREADS) || !(defined(__GNUC__) || defined(__clang__))
#elif defined(_WIN32)
#define VIT__THREADS 2
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#define VIT__LEAN_DEFINED
#endif
#include <windows.h>
#ifdef VIT__LEAN_DEFINED
#undef WIN32_LEAN_AND_MEAN
#undef VIT__LEAN_DEFINED
#endif
#elif (defined(__unix__) || defined(__APPLE__)) && (!defined(__EMSCRIPTEN__) || defined(__EMSCRIPTEN_PTHREADS__))
#define VIT__THREADS 1
#include <pthread.h>
#include <unistd.h>
#if defined(__linux__) || defined(__APPLE__)
#include <sys/resource.h> /* getrusage's count of involuntary context switches (vit__preempted) */
#define VIT__RUSAGE 1
#endif
#endif
#if !defined(VIT_NO_STDIO) && (defined(__unix__) || defined(__APPLE__))
#include <sys/mman.h>
#include <fcntl.h>
#include <unistd.h>
#define VIT__HAVE_MMAP 1
#endif
/* Linux 5.14's MADV_POPULATE_WRITE (vit__populate). <sys/mman.h> names it, and glibc declares madvise, only when
   a feature macro asks (_DEFAULT_SOURCE), and -std=c99 alone does not: glibc has madvise all the same, and the
   value is the kernel's on every architecture; a kernel without it says EINVAL, and nothing changes. */
#if defined(VIT__HAVE_MMAP) && defined(__linux__)
#if defined(MADV_POPULATE_WRITE)
#define VIT__POPULATE_WRITE MADV_POPULATE_WRITE
#elif defined(__GLIBC__) && !defined(__cplusplus)
#if !defined(__USE_MISC)
extern int madvise(void *addr, size_t len, int advice);
#endif
#define VIT__POPULATE_WRITE 23
#endif
#endif
#if !defined(VIT_NO_STDIO) && (defined(__unix__) || defined(__APPLE__) || defined(_WIN32))
#include <sys/stat.h>
#define VIT__HAVE_STAT 1
#if defined(S_ISDIR) && defined(S_ISREG)
#define VIT__IS_DIR(m) S_ISDIR(m)
#define VIT__IS_REG(m) S_ISREG(m)
#else /* MSVC */
#define VIT__IS_DIR(m) (((m) & _S_IFMT) == _S_IFDIR)
#define VIT__IS_REG(m) (((m) & _S_IFMT) == _S_IFREG)
#endif
#endif
#ifndef VIT_NO_STDIO
#include <errno.h>
#endif

#if defined(__cplusplus)
#define VIT__TLS thread_local
#elif defined(_MSC_VER)
#define VIT__TLS __declspec(thread)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__STDC_NO_THREADS__)
#define VIT__TLS _Thread_local
#else
#define VIT__TLS __thread
#endif

#if defined(__GNUC__) || defined(__clang__)
#define VIT__PREFETCH(p) __builtin_prefetch(p)
#define VIT__PREFETCHW(p) __builtin_prefetch(p, 1) /* a line about to be written */
#else
#define VIT__PREFETCH(p) ((void)(p))
#define VIT__PREFETCHW(p) ((void)(p))
#endif
#if defined(__GNUC__) || defined(__clang__)
#define VIT__INLINE __inline__ __attribute__((always_inline))
#define VIT__NOINLINE __attribute__((noinline))
#elif defined(_MSC_VER)
#define VIT__INLINE __forceinline
#define VIT__NOINLINE __declspec(noinline)
#else
#define VIT__INLINE
#define VIT__NOINLINE
#endif

/* ---- private helpers: vectors ---- */
/* About a dozen helpers make a fast kernel read line for line like its
   reference. VIT__VW floats per vector: 16 with native AVX-512, else 8
   (AVX2 on x86; two NEON registers on ARM; plain C arrays elsewhere). */

#ifndef VIT_NO_SIMD
static float vit__h8_sum(simde__m256 a) {
    simde__m128 lo = simde_mm256_castps256_ps128(a), hi = simde_mm256_extractf128_ps(a, 1);
    lo = simde_mm_add_ps(lo, hi);
    lo = simde_mm_add_ps(lo, simde_mm_movehl_ps(lo, lo));
    lo = simde_mm_add_ss(lo, simde_mm_movehdup_ps(lo));
    return simde_mm_cvtss_f32(lo);
}
static float vit__h8_max(simde__m256 a) {
    simde__m128 lo = simde_mm256_castps256_ps128(a), hi = simde_mm256_extractf128_ps(a, 1);
    lo = simde_mm_max_ps(lo, hi);
    lo = simde_mm_max_ps(lo, simde_mm_movehl_ps(lo, lo));
    lo = simde_mm_max_ss(lo, simde_mm_movehdup_ps(lo));
    return simde_mm_cvtss_f32(lo);
}
#if defined(SIMDE_X86_AVX512F_NATIVE)
#define VIT__VW 16
typedef simde__m512 vit__vf;
static float vit__h16(simde__m512 a, int max) {
    float t[16];
    simde_mm512_storeu_ps(t, a);
    return max ? vit__h8_max(simde_mm256_max_ps(simde_mm256_loadu_ps(t), simde_mm256_loadu_ps(t + 8)))
               : vit__h8_sum(simde_mm256_add_ps(simde_mm256_loadu_ps(t), simde_mm256_loadu_ps(t + 8)));
}
#define vit__v_load(p) simde_mm512_loadu_ps(p)
#define vit__v_store(p, v) simde_mm512_storeu_ps(p, v)
#ifdef SIMDE_X86_AVX512F_NATIVE /* SIMDe 0.7 has no simde_mm512_stream_ps */
#define vit__v_stream(p, v) _mm512_stream_ps(p, v) /* p 64-byte aligned */
#else
#define vit__v_stream(p, v) simde_mm512_storeu_ps(p, v)
#endif
#define vit__v_set1(s) simde_mm512_set1_ps(s)
#define vit__v_zero() simde_mm512_setzero_ps()
#define vit__v_add(a, b) simde_mm512_add_ps(a, b)
#define vit__v_sub(a, b) simde_mm512_sub_ps(a, b)
#define vit__v_mul(a, b) simde_mm512_mul_ps(a, b)
#define vit__v_div(a, b) simde_mm512_div_ps(a, b)
#define vit__v_rcp(a) _mm512_rcp14_ps(a) /* 1/a within 2^-14 (this branch is native AVX-512 only) */
#define vit__v_fma(a, b, c) simde_mm512_fmadd_ps(a, b, c) /* a*b + c */
#define vit__v_max(a, b) simde_mm512_max_ps(a, b)
#define vit__v_min(a, b) simde_mm512_min_ps(a, b)
#define vit__v_floor(a) simde_mm512_roundscale_ps(a, SIMDE_MM_FROUND_TO_NEG_INF)
#define vit__v_as_i(a) simde_mm512_castps_si512(a)
#define vit__v_as_f(a) simde_mm512_castsi512_ps(a)
#define vit__v_shl23(i) simde_mm512_slli_epi32(i, 23)
/* SIMDe 0.7 has no 512-bit reductions, and GCC 12's own 256-bit
   extraction trips -Wmaybe-uninitialized in C++: fold through memory. */
#define vit__v_hsum(a) vit__h16(a, 0)
#define vit__v_hmax(a) vit__h16(a, 1)
#define vit__v_abs(a) simde_mm512_abs_ps(a)
/* x >= 0 ? a : b */
#define vit__v_select_ge0(x, a, b) \
    simde_mm512_mask_blend_ps(simde_mm512_cmp_ps_mask(x, simde_mm512_setzero_ps(), SIMDE_CMP_GE_OQ), b, a)
#else
#define VIT__VW 8
typedef simde__m256 vit__vf;
#define vit__v_load(p) simde_mm256_loadu_ps(p)
#define vit__v_store(p, v) simde_mm256_storeu_ps(p, v)
#define vit__v_stream(p, v) simde_mm256_stream_ps(p, v) /* p 32-byte aligned */
#define vit__v_set1(s) simde_mm256_set1_ps(s)
#define vit__v_zero() simde_mm256_setzero_ps()
#define vit__v_add(a, b) simde_mm256_add_ps(a, b)
#define vit__v_sub(a, b) simde_mm256_sub_ps(a, b)
#define vit__v_mul(a, b) simde_mm256_mul_ps(a, b)
#define vit__v_div(a, b) simde_mm256_div_ps(a, b)
#define vit__v_rcp(a) simde_mm256_rcp_ps(a) /* 1/a within 1.5 * 2^-12 */
#if defined(SIMDE_WASM_SIMD128_NATIVE) && !defined(SIMDE_X86_FMA_NATIVE)
/* WebAssembly has no fused multiply-add, and SIMDe 0.7's fmadd then runs
   lane by lane through memory (10x slower than scalar code); its result
   is a*b rounded, then + c rounded, which this computes vectorised. */
#define vit__v_fma(a, b, c) simde_mm256_add_ps(simde_mm256_mul_ps(a, b), c)
#else
#define vit__v_fma(a, b, c) simde_mm256_fmadd_ps(a, b, c) /* a*b + c */
#endif
#define vit__v_max(a, b) simde_mm256_max_ps(a, b)
#define vit__v_min(a, b) simde_mm256_min_ps(a, b)
#define vit__v_floor(a) simde_mm256_floor_ps(a)
#define vit__v_as_i(a) simde_mm256_castps_si256(a)
#define vit__v_as_f(a) simde_mm256_castsi256_ps(a)
#define vit__v_shl23(i) simde_mm256_slli_epi32(i, 23)
#define vit__v_hsum(a) vit__h8_sum(a)
#define vit__v_hmax(a) vit__h8_max(a)
#define vit__v_abs(a) simde_mm256_andnot_ps(simde_mm256_set1_ps(-0.0f), a)
/* x >= 0 ? a : b */
#define vit__v_select_ge0(x, a, b) \
    simde_mm256_blendv_ps(b, a, simde_mm256_cmp_ps(x, simde_mm256_setzero_ps(), SIMDE_CMP_GE_OQ))
#endif

/* out[r] = vit__v_hsum (max: vit__v_hmax) of the vector at v + r VIT__VW, r < rows: the same bits, each row's lanes
   added in vit__v_hsum's pairs. With AVX-512, sixteen rows' trees side by side, two rows' vectors folded into one
   at each level (15 adds and 30 shuffles for 16 rows, where one row's tree is a chain of 4 adds and 4 shuffles
   with the rest of the row waiting on it: the I8 attention's row ends, mode 2, had a third of the samples perf took
   in vit__att_task_bf16, the softmax's task). */
static void vit__v_hred_rows(float *out, const float *v, int rows, int max) {
#if VIT__VW == 16 && defined(SIMDE_X86_AVX512F_NATIVE)
    int r0, i, j;
    for (r0 = 0; r0 < rows; r0 += 16) {
        __m512 a[16], t[8];
        float o[16];
        int n = rows - r0 < 16 ? rows - r0 : 16;
        for (i = 0; i < 16; i++) a[i] = i < n ? _mm512_loadu_ps(v + (size_t)(r0 + i) * 16) : _mm512_setzero_ps();
#define VIT__RED(x, y) (max ? _mm512_max_ps(x, y) : _mm512_add_ps(x, y))
        /* lanes l and l + 8 (t[i]: row 2i's eight, then row 2i + 1's) */
        for (i = 0; i < 8; i++)
            t[i] = VIT__RED(_mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0x44),
                            _mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0xee));
        /* then l and l + 4 (a[i]: rows 4i .. 4i + 3's four, a 128-bit lane each) */
        for (i = 0; i < 4; i++)
            a[i] = VIT__RED(_mm512_shuffle_f32x4(t[2 * i], t[2 * i + 1], 0x88),
                            _mm512_shuffle_f32x4(t[2 * i], t[2 * i + 1], 0xdd));
        /* then l and l + 2 (t[i], 128-bit lane k: rows 8i + k's two, then 8i + 4 + k's) */
        for (i = 0; i < 2; i++)
            t[i] = VIT__RED(_mm512_shuffle_ps(a[2 * i], a[2 * i + 1], 0x44),
                            _mm512_shuffle_ps(a[2 * i], a[2 * i + 1], 0xee));
        /* then 0 and 1: lane k holds rows k, 4 + k, 8 + k, 12 + k */
        a[0] = VIT__RED(_mm512_shuffle_ps(t[0], t[1], 0x88), _mm512_shuffle_ps(t[0], t[1], 0xdd));
#undef VIT__RED
        _mm512_storeu_ps(o, a[0]);
        for (i = 0; i < 4; i++)
            for (j = 0; j < 4; j++)
                if (4 * j + i < n) out[r0 + 4 * j + i] = o[4 * i + j];
    }
#else
    int r;
    for (r = 0; r < rows; r++)
        out[r] = max ? vit__v_hmax(vit__v_load(v + (size_t)r * VIT__VW))
                     : vit__v_hsum(vit__v_load(v + (size_t)r * VIT__VW));
#endif
}

/* exp(x) for a vector: Cephes' expf. n = round(x / ln2), r = x - n*ln2 in
   two parts (exact high part), degree-6 polynomial on |r| <= ln2/2, then
   scale by 2^n through the exponent bits. Relative error about 1.2e-7
   (2 ulp) against libm's expf; inputs below -87.3 give 0 (true value
   < 1e-38), above 88 are clamped. n comes from one fma into 1.5 * 2^23 +
   127, whose low mantissa bits it lands in, rounded to nearest (a floor
   took two uops more: the softmax's exp pass 8% faster at 1,370 keys). */
static vit__vf vit__v_exp(vit__vf x) {
    vit__vf fx, r, y, r2, t;
    x = vit__v_min(x, vit__v_set1(88.0f)); /* keeps 2^fx finite */
    x = vit__v_max(x, vit__v_set1(-87.3365478515625f));
    t = vit__v_fma(x, vit__v_set1(1.44269504088896341f), vit__v_set1(12583039.0f));
    fx = vit__v_sub(t, vit__v_set1(12583039.0f)); /* n, -126..127, exactly */
    r = vit__v_fma(fx, vit__v_set1(-0.693359375f), x);
    r = vit__v_fma(fx, vit__v_set1(2.12194440e-4f), r);
    r2 = vit__v_mul(r, r);
    y = vit__v_set1(1.9875691500e-4f);
    y = vit__v_fma(y, r, vit__v_set1(1.3981999507e-3f));
    y = vit__v_fma(y, r, vit__v_set1(8.3334519073e-3f));
    y = vit__v_fma(y, r, vit__v_set1(4.1665795894e-2f));
    y = vit__v_fma(y, r, vit__v_set1(1.6666665459e-1f));
    y = vit__v_fma(y, r, vit__v_set1(5.0000001201e-1f));
    y = vit__v_fma(y, r2, vit__v_add(r, vit__v_set1(1.0f)));
    /* 2^fx: t holds fx + 127 in its low mantissa bits; shifting by 23 moves it to the exponent. */
    return vit__v_mul(y, vit__v_as_f(vit__v_shl23(vit__v_as_i(t))));
}

/* 2^x for x <= 24: the f32 attention's exponentials, its scores in units of
   log2 e (vit__att_exp_v). n = x rounded, f = x - n exactly (Sterbenz),
   2^f by a degree-6 fit on |f| <= 1/2 of our own (tools/fit_exp2.py: 2e-9
   relative; 1.3 ulp in float arithmetic, test_kernels' test_exp2),
   times 2^n: AVX-512's vscalefps, else the exponent bits as vit__v_exp's
   (n from the add into 1.5 * 2^23 + 127). 10 operations, 12 without
   AVX-512, where e^x of a score takes vit__v_exp's 16 (x - n ln2 needs
   two parts; 2^x's reduction is exact). Inputs below -126 give 2^-126.
   (Inline: unused where no attention is built.) */
static VIT__INLINE vit__vf vit__v_exp2(vit__vf x) {
    vit__vf n, f, y;
    x = vit__v_max(x, vit__v_set1(-126.0f));
#if VIT__VW == 16
    n = simde_mm512_roundscale_ps(x, 0x08); /* to nearest, no exceptions */
#else
    vit__vf t = vit__v_add(x, vit__v_set1(12583039.0f));
    n = vit__v_sub(t, vit__v_set1(12583039.0f));
#endif
    f = vit__v_sub(x, n);
    y = vit__v_fma(vit__v_set1(1.535360497655347e-4f), f, vit__v_set1(1.339887036010623e-3f));
    y = vit__v_fma(y, f, vit__v_set1(9.61843691766262e-3f));
    y = vit__v_fma(y, f, vit__v_set1(5.5503323674201965e-2f));
    y = vit__v_fma(y, f, vit__v_set1(2.4022647738456726e-1f));
    y = vit__v_fma(y, f, vit__v_set1(6.931471824645996e-1f));
    y = vit__v_fma(y, f, vit__v_set1(1.0f));
#if VIT__VW == 16
    return simde_mm512_scalef_ps(y, n);
#else
    return vit__v_mul(y, vit__v_as_f(vit__v_shl23(vit__v_as_i(t))));
#endif
}

/* exp(x) for x <= 16 where the result is rounded to bf16 next (the lowp
   attention's exponentials, whose sum stays f32; up to e^16 past a row's
   reference: vit__att_exp_row). AVX-512: u = x log2(e), n = u rounded
   (vrndscaleps), 2^(u - n) by a degree-4 polynomial on |u - n| <= 1/2
   fitted for relative error (2.9e-6 against exp2; u's rounding adds at
   most 7e-7 where |x| <= 16: within 4e-6 there, 500 times under bf16's
   half step, 2^-9, and within 1e-5 further down, for terms under e^-16
   of the row's largest), times 2^n (vscalefps): 8 operations, where the
   form below takes 11 (BF16's attention at 518 px, a layer 16.3-16.6 ->
   15.8-16.1 ms on Zen 4). Inputs below -87.3 give 2^-126, not 0: a term
   that small beside the row's largest (>= 1) is lost to bf16 anyway (and
   the callers' lanes past the keys are 0 before it, never a denormal
   result). Elsewhere: n and r = x - n ln2 as vit__v_exp (in two parts:
   where fma is a multiply and an add, SIMDe's portable build and
   WebAssembly, one part lost 9e-6 to cancellation), a degree-4 fit in r
   (5.4e-6), four fmas from the highest term. (Inline: unused where no
   lowp attention is built.) */
static VIT__INLINE vit__vf vit__v_exp_lo(vit__vf x) {
#if VIT__VW == 16
    vit__vf u = vit__v_max(vit__v_mul(x, vit__v_set1(1.44269504088896341f)), vit__v_set1(-126.0f));
    vit__vf n = simde_mm512_roundscale_ps(u, 0x08), f = vit__v_sub(u, n), y; /* to nearest, no exceptions */
    y = vit__v_fma(vit__v_set1(9.5828203484416e-3f), f, vit__v_set1(5.590633675456047e-2f));
    y = vit__v_fma(y, f, vit__v_set1(2.4024099111557007e-1f));
    y = vit__v_fma(y, f, vit__v_set1(6.931241750717163e-1f));
    y = vit__v_fma(y, f, vit__v_set1(1.0f));
    return simde_mm512_scalef_ps(y, n);
#else
    vit__vf t, fx, r, y;
    x = vit__v_max(x, vit__v_set1(-87.3365478515625f));
    t = vit__v_fma(x, vit__v_set1(1.44269504088896341f), vit__v_set1(12583039.0f));
    fx = vit__v_sub(t, vit__v_set1(12583039.0f));
    r = vit__v_fma(fx, vit__v_set1(-0.693359375f), x); /* exact with or without a fused fma */
    r = vit__v_fma(fx, vit__v_set1(2.12194440e-4f), r);
    y = vit__v_fma(vit__v_set1(4.127741977572441e-2f), r, vit__v_set1(1.6753460466861725e-1f));
    y = vit__v_fma(y, r, vit__v_set1(5.000511407852173e-1f));
    y = vit__v_fma(y, r, vit__v_set1(1.0f));
    y = vit__v_fma(y, r, vit__v_set1(1.0f));
    return vit__v_mul(y, vit__v_as_f(vit__v_shl23(vit__v_as_i(t))));
#endif
}

/* 255 2^u for u <= 0: I8's probabilities on their u8 scale (vit__att_p8_rows, its scores in units of log2 e).
   AVX-512: vit__v_exp_lo's polynomial on u itself, its coefficients times 255 (two multiplies a vector fewer, and
   no clamp: vscalefps takes any n, 2^-200 is 0); elsewhere vit__v_exp_lo's. Against e^s times 255 by a multiply,
   Zen 5, one thread, alternating: ViT-B/16 I8 at B = 8 1.011x faster (20 of 20 rounds), DINOv2-S/14 I8 at 518 px
   1.033x (10 of 10). */
static VIT__INLINE vit__vf vit__v_exp2_255(vit__vf u) {
#if VIT__VW == 16
    vit__vf n = simde_mm512_roundscale_ps(u, 0x08), f = vit__v_sub(u, n), y;
    y = vit__v_fma(vit__v_set1(255.0f * 9.5828203484416e-3f), f, vit__v_set1(255.0f * 5.590633675456047e-2f));
    y = vit__v_fma(y, f, vit__v_set1(255.0f * 2.4024099111557007e-1f));
    y = vit__v_fma(y, f, vit__v_set1(255.0f * 6.931241750717163e-1f));
    y = vit__v_fma(y, f, vit__v_set1(255.0f));
    return simde_mm512_scalef_ps(y, n);
#else
    return vit__v_mul(vit__v_exp_lo(vit__v_mul(u, vit__v_set1(0.693147180559945309f))), vit__v_set1(255.0f));
#endif
}
#endif /* !VIT_NO_SIMD */

/* ---- private helpers: errors ---- */

static VIT__TLS char vit__err[512];
static vit_log_fn vit__log_fn;
static void *vit__log_user;

/* printf-style checking, and vsnprintf with C99 formats (%zu) on MinGW
   whatever its msvcrt supports. */
#if defined(__MINGW32__)
#define VIT__FORMAT(f, a) __attribute__((format(gnu_printf, f, a)))
#define vit__vsnprintf __mingw_vsnprintf
#elif defined(__GNUC__) || defined(__clang__)
#define VIT__FORMAT(f, a) __attribute__((format(printf, f, a)))
#define vit__vsnprintf vsnprintf
#else
#define VIT__FORMAT(f, a)
#define vit__vsnprintf vsnprintf
#endif

VIT__FORMAT(2, 3)
static vit_result vit__fail(vit_result r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vit__vsnprintf(vit__err, sizeof vit__err, fmt, ap);
    va_end(ap);
    return r;
}

/* a*b into *out unless it overflows size_t (stb's mul2sizes_valid). */
static int vit__mul_ok(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a) return 0;
    *out = a * b;
    return 1;
}

static int vit__add_ok(size_t a, size_t b, size_t *out) {
    if (b > SIZE_MAX - a) return 0;
    *out = a + b;
    return 1;
}

/* ---- private helpers: threads ---- */
/* vit__parallel(n, threads, fn, ctx) runs the iterations [0, n) of a loop
   on up to `threads` threads: the caller as t = 0 and the pool's workers as
   t = 1, 2, ..., each claiming the next block [i0, i1) from a shared
   counter and running fn(ctx, i0, i1, t), until none is left. Every
   parallel loop of the kernels is one such call. An iteration writes only
   its own outputs and computes them the same way whichever thread runs it,
   so results are bit-identical for any thread count and any order of
   claims; t only picks per-thread scratch.

   Waiting is bounded. A worker between loops, or the caller waiting for
   the last blocks, spins VIT__SPIN pauses (about 0.1 ms: longer than the
   gap between two loops of a forward pass, so a quiet machine seldom pays
   a wake-up; a 64th of it when there are more threads than processors),
   then sleeps on a condition variable. libgomp's threads spin for
   milliseconds at every barrier instead, so when another process held one
   of two cores, a 2-thread ViT-B/16 forward took 1.15 s instead of 0.08 s.
   Claiming small blocks (VIT__BLOCKS per thread) keeps a thread that the
   system deschedules from holding more than one block while the others
   take the rest, and the caller waits only for the workers that joined
   the loop: one that had not when the blocks ran out is withdrawn from it
   (vit__pool.state).

   One caller at a time has the pool: a loop started while it is taken (by
   another thread's forward pass, or from inside a loop) runs on its own
   caller. Workers start when a loop first wants them and live until the
   process ends (after fork(), the child starts its own). */

#define VIT__PAR_MIN 32768.0 /* floats of work below which a loop is not worth a second thread */

typedef void (*vit__task)(const void *ctx, int i0, int i1, int thread);

static VIT__TLS int vit__nthreads; /* the calling thread's vit_set_threads, 0: the default */

#ifdef VIT__THREADS
#ifndef VIT__SPIN
#define VIT__SPIN 4000 /* pauses a waiting thread spins before it sleeps: ~0.1 ms on Zen 3, 0.2 ms on Zen 4 */
#endif
#ifndef VIT__BLOCKS
#define VIT__BLOCKS 16 /* blocks of a loop per thread */
#endif
#if defined(__x86_64__) || defined(__i386__)
#define VIT__PAUSE() __builtin_ia32_pause()
#elif defined(__aarch64__) || defined(__arm__)
#define VIT__PAUSE() __asm__ __volatile__("yield")
#else
#define VIT__PAUSE() ((void)0)
#endif
#define vit__aload(p) __atomic_load_n(p, __ATOMIC_ACQUIRE)
#define vit__astore(p, v) __atomic_store_n(p, v, __ATOMIC_RELEASE)
#define vit__aadd(p, v) __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL)
#define vit__axchg(p, v) __atomic_exchange_n(p, v, __ATOMIC_ACQ_REL)
#if VIT__THREADS == 1
typedef pthread_mutex_t vit__mutex;
typedef pthread_cond_t vit__cond;
#define VIT__MUTEX_INIT PTHREAD_MUTEX_INITIALIZER
#define VIT__COND_INIT PTHREAD_COND_INITIALIZER
#define vit__lock(m) pthread_mutex_lock(m)
#define vit__unlock(m) pthread_mutex_unlock(m)
#define vit__sleep(c, m) pthread_cond_wait(c, m)
#define vit__wake_all(c) pthread_cond_broadcast(c)
#define vit__wake_one(c) pthread_cond_signal(c)
#else
typedef SRWLOCK vit__mutex;
typedef CONDITION_VARIABLE vit__cond;
#define VIT__MUTEX_INIT SRWLOCK_INIT
#define VIT__COND_INIT CONDITION_VARIABLE_INIT
#define vit__lock(m) AcquireSRWLockExclusive(m)
#define vit__unlock(m) ReleaseSRWLockExclusive(m)
#define vit__sleep(c, m) SleepConditionVariableSRW(c, m, INFINITE, 0)
#define vit__wake_all(c) WakeAllConditionVariable(c)
#define vit__wake_one(c) WakeConditionVariable(c)
#endif

static struct vit__pool {
    vit__mutex mu;
    vit__cond wake, done;        /* workers sleep on wake, the caller on done */
    int sleepers, caller_sleeps; /* under mu */
    int started, failed;         /* workers 1..started run; failed: one did not start, stop trying (under mu) */
    int forks;                   /* 1 once the fork handler is registered (under mu) */
    int taken;                   /* 1 while a caller has the pool (atomic) */
    /* The loop, written by the caller before it posts it (state[t], READY) and read by the workers that join it */
    vit__task fn;
    const void *ctx;
    unsigned n, grain, threads;
    int spin;         /* pauses to spin before sleeping: fewer when there are more threads than processors */
    unsigned next;    /* the next unclaimed iteration (atomic) */
    int fixed;        /* set by tests: thread t runs blocks t, t + threads, ..., so that every thread surely
                         runs some (the claims of a loaded machine can leave one with none) */
    unsigned gen;     /* the caller's count of its loops, 30 bits */
    unsigned contended; /* loops left during which small ones run on one thread (vit__par_threads; atomic) */
    unsigned preempted; /* products and attentions left that run on one thread when small (vit__busy_threads) */
    unsigned loops;     /* the caller's loops posted to the workers (vit__preempted; the caller's, under taken), */
    long switches;      /* the process's involuntary context switches at the last look (-1: none yet) */
    double cpu;         /* and its CPU seconds then */
    unsigned stretch;   /* the next stretch's products and attentions on one thread (0: VIT__PREEMPT_FIRST) */
    unsigned was;       /* preempted as the last look left it */
    unsigned state[VIT_MAX_THREADS]; /* worker t's part in the loop: gen << 2 | VIT__POOL_* (atomic) */
} vit__pool = {VIT__MUTEX_INIT, VIT__COND_INIT, VIT__COND_INIT, 0, 0, 0, 0, 0, 0, NULL, NULL, 0, 0, 0, 0, 0, 0, 0, 0,
               0, 0, -1, 0.0, 0, 0, {0}};

/* A worker's state for the loop of generation gen: posted to it (READY), which it takes (RUNNING) and ends (DONE)
   unless the caller, having run every block, withdraws it first (NONE). A compare-exchange decides between the two,
   so a worker the system had descheduled never joins a loop already run, and the caller does not wait for it:
   waiting for every worker to check in, with another process spinning on one of two cores, an I8 ViT-B/16 forward
   on two threads took 1.10-1.22x its time on one (the caller ran a short loop's every block, then waited out the
   descheduled worker's turn); now 1.04-1.07x, and the same on a quiet machine (alternating runs). */
enum { VIT__POOL_NONE = 0, VIT__POOL_READY = 1, VIT__POOL_RUNNING = 2, VIT__POOL_DONE = 3 };

/* Claim blocks of the current loop and run them until none is left. */
static void vit__pool_run(int thread) {
    unsigned n = vit__pool.n, g = vit__pool.grain, i;
    if (vit__pool.fixed)
        for (i = (unsigned)thread * g; i < n; i += vit__pool.threads * g)
            vit__pool.fn(vit__pool.ctx, (int)i, (int)(n - i < g ? n : i + g), thread);
    else
        while ((i = vit__aadd(&vit__pool.next, g)) < n)
            vit__pool.fn(vit__pool.ctx, (int)i, (int)(n - i < g ? n : i + g), thread);
}

static void vit__pool_worker(int t) {
    unsigned st;
    int s, spin = VIT__SPIN;
    for (;;) {
        for (s = 0; s < spin && ((st = vit__aload(&vit__pool.state[t])) & 3u) != VIT__POOL_READY; s++) VIT__PAUSE();
        if ((st & 3u) != VIT__POOL_READY) {
            vit__lock(&vit__pool.mu);
            vit__pool.sleepers++;
            while (((st = vit__aload(&vit__pool.state[t])) & 3u) != VIT__POOL_READY)
                vit__sleep(&vit__pool.wake, &vit__pool.mu);
            vit__pool.sleepers--;
            vit__unlock(&vit__pool.mu);
        }
        /* the loop's fields are the caller's until this succeeds, and stay as they are until DONE */
        if (!__atomic_compare_exchange_n(&vit__pool.state[t], &st, (st & ~3u) | VIT__POOL_RUNNING, 0,
                                         __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            continue; /* withdrawn */
        vit__pool_run(t);
        spin = vit__pool.spin; /* read before the caller may start the next loop */
        vit__astore(&vit__pool.state[t], (st & ~3u) | VIT__POOL_DONE);
        vit__lock(&vit__pool.mu);
        if (vit__pool.caller_sleeps) vit__wake_one(&vit__pool.done);
        vit__unlock(&vit__pool.mu);
    }
}

#if VIT__THREADS == 1
static void *vit__pool_main(void *arg) {
    vit__pool_worker((int)(intptr_t)arg);
    return NULL;
}
static int vit__pool_spawn(int t) {
    pthread_t th;
    if (pthread_create(&th, NULL, vit__pool_main, (void *)(intptr_t)t) != 0) return 0;
    pthread_detach(th);
    return 1;
}
/* A forked child has none of the parent's workers: it starts its own. */
static void vit__pool_forked(void) {
    pthread_mutex_init(&vit__pool.mu, NULL);
    pthread_cond_init(&vit__pool.wake, NULL);
    pthread_cond_init(&vit__pool.done, NULL);
    vit__pool.sleepers = vit__pool.caller_sleeps = vit__pool.started = vit__pool.failed = vit__pool.taken = 0;
}
#else
static DWORD WINAPI vit__pool_main(LPVOID arg) {
    vit__pool_worker((int)(intptr_t)arg);
    return 0;
}
static int vit__pool_spawn(int t) {
    HANDLE h = CreateThread(NULL, 0, vit__pool_main, (LPVOID)(intptr_t)t, 0, NULL);
    if (!h) return 0;
    CloseHandle(h);
    return 1;
}
#endif

/* Workers 1..threads-1, started if need be: the threads a loop gets. */
static int vit__pool_grow(int threads) {
    vit__lock(&vit__pool.mu);
#if VIT__THREADS == 1
    if (!vit__pool.forks && !vit__pool.failed && pthread_atfork(NULL, NULL, vit__pool_forked) != 0)
        vit__pool.failed = 1;
    vit__pool.forks = 1;
#endif
    while (vit__pool.started < threads - 1 && !vit__pool.failed) {
        vit__pool.state[vit__pool.started + 1] = VIT__POOL_NONE;
        if (vit__pool_spawn(vit__pool.started + 1)) vit__pool.started++;
        else vit__pool.failed = 1;
    }
    if (threads > vit__pool.started + 1) threads = vit__pool.started + 1;
    vit__unlock(&vit__pool.mu);
    return threads;
}
#endif /* VIT__THREADS */

#ifdef VIT__THREADS
/* The processors online (found once). */
static int vit__cpus(void) {
    static int n; /* atomic */
    int c = vit__aload(&n);
    if (c == 0) {
#if VIT__THREADS == 1
        long k = sysconf(_SC_NPROCESSORS_ONLN);
#else
        SYSTEM_INFO si;
        long k;
        GetSystemInfo(&si);
        k = (long)si.dwNumberOfProcessors;
#endif
        c = k < 1 ? 1 : k > VIT_MAX_THREADS ? VIT_MAX_THREADS : (int)k;
        vit__astore(&n, c);
    }
    return c;
}
#endif

/* The threads a loop of the calling thread may use: its vit_set_threads,
   else OMP_NUM_THREADS when that is a count in range (as when vit.h used
   OpenMP), else the processors online. */
static int vit__threads(void) {
#ifdef VIT__THREADS
    static int env; /* OMP_NUM_THREADS's count, -1 when unset or not one; found once (atomic) */
    int e;
    if (vit__nthreads) return vit__nthreads;
    e = vit__aload(&env);
    if (e == 0) {
        const char *var = getenv("OMP_NUM_THREADS");
        char *end;
        long v = var ? strtol(var, &end, 10) : 0;
        e = var && end != var && *end == '\0' && v >= 1 && v <= VIT_MAX_THREADS ? (int)v : -1;
        vit__astore(&env, e);
    }
    return e > 0 ? e : vit__cpus();
#else
    return 1;
#endif
}

/* Threads for a loop over `work` floats: one below VIT__PAR_MIN, where
   handing it to the pool costs more than it saves, and one below
   VIT__PAR_BUSY for VIT__CONTENDED loops after a caller had to sleep
   waiting for a worker: then a worker is likely to lose its core to
   another process inside a block, and the caller waits out its turn at
   every barrier, so the loops whose split saves least (LayerNorm, x's
   conversion at B = 1) give up theirs. With another process spinning on
   one of two cores, ViT-B/16 int8 at B = 1, two threads over one (the one
   pinned to the free core), five alternating pairs: 1.12 -> 1.06; on a
   quiet machine the same (two threads: 0.996x; DINOv2-S/14 int8 at 518 px
   0.990x, where the attention's whole heads leave the caller waiting at
   times, and a bound of 1M floats, which took its conversions off the
   second thread, cost 5%). Results do not depend on it. */
#define VIT__PAR_BUSY 262144.0
#define VIT__CONTENDED 256u /* loops */
static int vit__par_threads(double work) {
#ifdef VIT__THREADS
    if (work < VIT__PAR_BUSY && (vit__aload(&vit__pool.contended) || vit__aload(&vit__pool.preempted))) return 1;
#endif
    return work >= VIT__PAR_MIN ? vit__threads() : 1;
}

/* Every VIT__LOOKS loops posted to the workers, the process's involuntary context switches (getrusage) since the
   last look: at least VIT__SWITCHES, and VIT__SWITCH_RATE per second of the process's CPU time, mean the system is
   taking a core from these threads (another process on one of them), and a worker that loses its core inside a
   block holds each loop's end until its next turn. Then the next stretch of products and attentions under
   VIT__BUSY_MACS and VIT__BUSY_ATT multiply-adds (ViT-B/16 at B = 1: all of them; at B = 8 none) run on the
   calling thread alone (vit__busy_threads), which the system puts on the free core; then the threads try again.
   With another process spinning on one of two cores, ViT-B/16 at B = 1, two threads over one (that one pinned to
   the free core), alternating pairs: I8 1.13 -> 1.04 (one thread had just become 4% faster with the next panels'
   prefetch, which two threads' claims of single pairs do not get), BF16 1.08 -> 1.01, F32 1.02 -> 1.01; at B = 8
   I8 0.94 either way. The bounds, from each look's count on this Zen 5 (ViT-B/16 I8 on two threads): a core taken
   gives 18-41 switches a look at B = 1 (13-15 ms of CPU), 1,500-2,800 a CPU second (at B = 8 ~300); a quiet
   machine 0-4, now and then 16 (under 300 a second), where the first bounds (2 and 150) had let two or three
   switches of its own start a stretch on one thread; and the looks that span such a stretch, run a pass at a
   time with pauses among other engines (compare.py's stepped passes: their pools spin between them), 10-17 over
   70-115 ms of CPU (87-244 a second), each starting another: ViT-B/16 I8 at B = 1 on two threads had fallen to
   one thread's 0.041 s from 0.023 s after a few passes and stayed there. A stretch is VIT__PREEMPT_FIRST of them
   at first, doubled up to VIT__CONTENDED at each look that finds the system still taking a core, and back to the
   first length after a look whose whole span ran on the threads unhindered: a burst of a few milliseconds (another
   program's threads spinning out their last pass) costs half a pass on one thread, not four. Stepped after ONNX
   Runtime's passes, whose threads spun on into vit.h's (before bench_peers.py stopped them), ViT-B/16 I8 at B = 1
   on two threads (this Zen 5) had run four or five passes at a time on one thread, 0.041 s against 0.023; with two
   threads of another program spinning 30 ms every half second, 150 passes: a mean of 30.7 ms with stretches of
   VIT__CONTENDED from the start, 27.7 ms so (49 and 18 passes past 30 ms). Results do not depend on it. */
#define VIT__LOOKS 32u
#define VIT__PREEMPT_FIRST 32u
#define VIT__SWITCHES 10
#define VIT__SWITCH_RATE 600.0 /* a CPU second of the process's */
#define VIT__BUSY_MACS 5e8
#define VIT__BUSY_ATT 1e8 /* an attention's: its heads balance over the threads from B = 8 (ViT-B/16: 0.48e9) */
#ifdef VIT__RUSAGE
static double vit__cpu_seconds(const struct rusage *u) { /* the process's, user and system */
    return (double)u->ru_utime.tv_sec + (double)u->ru_stime.tv_sec +
           1e-6 * (double)(u->ru_utime.tv_usec + u->ru_stime.tv_usec);
}
#endif
#ifdef VIT__THREADS
static void vit__preempted(void) {
#ifdef VIT__RUSAGE
    struct rusage u;
    double cpu;
    if (++vit__pool.loops % VIT__LOOKS || getrusage(RUSAGE_SELF, &u) != 0) return;
    cpu = vit__cpu_seconds(&u);
    if (vit__pool.switches >= 0 && u.ru_nivcsw - vit__pool.switches >= VIT__SWITCHES &&
        (double)(u.ru_nivcsw - vit__pool.switches) >= VIT__SWITCH_RATE * (cpu - vit__pool.cpu)) {
        unsigned n = vit__pool.stretch ? vit__pool.stretch : VIT__PREEMPT_FIRST;
        vit__astore(&vit__pool.preempted, n);
        vit__pool.stretch = n < VIT__CONTENDED / 2 ? 2 * n : VIT__CONTENDED;
    } else if (!vit__pool.was && !vit__aload(&vit__pool.preempted))
        vit__pool.stretch = 0; /* no stretch since the last look, and unhindered: a burst, not a busy core */
    vit__pool.was = vit__aload(&vit__pool.preempted);
    vit__pool.switches = u.ru_nivcsw;
    vit__pool.cpu = cpu;
#endif
}
#endif
/* The threads for a product or attention of `macs` multiply-adds: one while vit__preempted's count runs down and it
   is under `small`, else vit__threads(). */
static int vit__busy_threads(double macs, double small) {
#ifdef VIT__THREADS
    unsigned left = vit__aload(&vit__pool.preempted);
    if (left && macs < small) {
        vit__astore(&vit__pool.preempted, left - 1);
        return 1;
    }
#else
    (void)macs;
    (void)small;
#endif
    return vit__threads();
}

/* Never inlined: a loop's body then stays in its task function, which
   clang unrolls as the small function it is. Inlined into a large caller
   (a test's main), SIMDe's two-iteration loops over 128-bit halves, marked
   for vectorisation, could stay rolled, and emcc's clang 14 warned that it
   could not vectorise them (-Wpass-failed). One call per loop costs
   nothing. */
static VIT__NOINLINE void vit__parallel(int n, int threads, vit__task fn, const void *ctx) {
#ifdef VIT__THREADS
    if (threads > n) threads = n;
    if (threads > 1 && !vit__axchg(&vit__pool.taken, 1)) {
        threads = vit__pool_grow(threads);
        if (threads > 1) {
            int t, s;
            unsigned left = vit__aload(&vit__pool.contended);
            if (left) vit__astore(&vit__pool.contended, left - 1);
            vit__preempted();
            vit__pool.fn = fn;
            vit__pool.ctx = ctx;
            vit__pool.n = (unsigned)n;
            vit__pool.threads = (unsigned)threads;
            vit__pool.spin = threads > vit__cpus() ? VIT__SPIN / 64 : VIT__SPIN;
            vit__pool.grain = (unsigned)(n / (VIT__BLOCKS * threads) > 1 ? n / (VIT__BLOCKS * threads) : 1);
            vit__astore(&vit__pool.next, 0u);
            vit__pool.gen = (vit__pool.gen + 1) & 0x3fffffffu;
            for (t = 1; t < threads; t++) vit__astore(&vit__pool.state[t], vit__pool.gen << 2 | VIT__POOL_READY);
            vit__lock(&vit__pool.mu);
            if (vit__pool.sleepers) vit__wake_all(&vit__pool.wake);
            vit__unlock(&vit__pool.mu);
            vit__pool_run(0);
            /* each worker withdrawn if it has not joined (fixed: waited for, it runs blocks of its own), or its end
               waited for */
            for (t = 1; t < threads; t++) {
                unsigned ready = vit__pool.gen << 2 | VIT__POOL_READY, done = vit__pool.gen << 2 | VIT__POOL_DONE;
                if (!vit__pool.fixed && __atomic_compare_exchange_n(&vit__pool.state[t], &ready,
                                                                    vit__pool.gen << 2 | VIT__POOL_NONE, 0,
                                                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                    continue;
                for (s = 0; s < vit__pool.spin && vit__aload(&vit__pool.state[t]) != done; s++) VIT__PAUSE();
                if (vit__aload(&vit__pool.state[t]) != done) {
                    vit__astore(&vit__pool.contended, VIT__CONTENDED);
                    vit__lock(&vit__pool.mu);
                    vit__pool.caller_sleeps = 1;
                    while (vit__aload(&vit__pool.state[t]) != done) vit__sleep(&vit__pool.done, &vit__pool.mu);
                    vit__pool.caller_sleeps = 0;
                    vit__unlock(&vit__pool.mu);
                }
            }
            vit__astore(&vit__pool.taken, 0);
            return;
        }
        vit__astore(&vit__pool.taken, 0);
    }
#else
    (void)threads;
#endif
    if (n > 0) fn(ctx, 0, n, 0);
}

/* ---- core: version, errors, log ---- */

VITDEF const char *vit_version(void) { return VIT_VERSION_STRING; }

VITDEF const char *vit_result_string(vit_result r) {
    switch (r) {
    case VIT_OK: return "ok";
    case VIT_ERR_ARG: return "invalid argument";
    case VIT_ERR_OOM: return "out of memory";
    case VIT_ERR_IO: return "i/o error";
    case VIT_ERR_FORMAT: return "bad file format";
    case VIT_ERR_SHAPE: return "shape mismatch";
    case VIT_ERR_DTYPE: return "unsupported dtype";
    case VIT_ERR_MISSING: return "missing tensor or key";
    case VIT_ERR_UNSUPPORTED: return "unsupported";
    case VIT_ERR_NONFINITE: return "non-finite value";
    case VIT_ERR_OVERFLOW: return "size overflow";
    }
    return "unknown error";
}

VITDEF const char *vit_last_error(void) { return vit__err; }

VITDEF void vit_set_log(vit_log_fn fn, void *user) {
    vit__log_fn = fn;
    vit__log_user = user;
}

VITDEF vit_result vit_set_threads(int n) {
    if (n < 1 || n > VIT_MAX_THREADS) return vit__fail(VIT_ERR_ARG, "threads: %d is not in 1..%d", n, VIT_MAX_THREADS);
    vit__nthreads = n;
    return VIT_OK;
}

VITDEF int vit_get_threads(void) { return vit__threads(); }

/* ---- arena ---- */

VITDEF void vit_arena_init(vit_arena *a, void *buf, size_t size) {
    memset(a, 0, sizeof *a);
    a->size = SIZE_MAX;
    if (buf) {
        /* Align the start so that aligned offsets are aligned addresses. */
        size_t skip = (VIT_ALIGN - (uintptr_t)buf % VIT_ALIGN) % VIT_ALIGN;
        a->base = (unsigned char *)buf + (skip < size ? skip : size);
        a->size = skip < size ? size - skip : 0;
    }
}

VITDEF vit_result vit_arena_init_alloc(vit_arena *a, size_t size) {
    size_t total;
    unsigned char *raw, *p;
    memset(a, 0, sizeof *a);
    /* Room to align the start, plus the original pointer stored below it. */
    if (!vit__add_ok(size, VIT_ALIGN + sizeof(void *), &total))
        return vit__fail(VIT_ERR_OVERFLOW, "arena of %zu bytes: size overflows", size);
    raw = (unsigned char *)VIT_MALLOC(total);
    if (!raw) return vit__fail(VIT_ERR_OOM, "arena: malloc of %zu bytes failed", total);
    p = raw + sizeof(void *);
    p += (VIT_ALIGN - ((uintptr_t)p % VIT_ALIGN)) % VIT_ALIGN;
    memcpy(p - sizeof(void *), &raw, sizeof raw);
    a->base = p;
    a->size = size;
    a->owned = 1;
    return VIT_OK;
}

VITDEF int vit_arena_counting(const vit_arena *a) { return a->base == NULL; }

/* Where the next allocation starts: `used` rounded up to VIT_ALIGN (below
   `used` only if that overflowed). */
static size_t vit__arena_next(const vit_arena *a) { return (a->used + (VIT_ALIGN - 1)) / VIT_ALIGN * VIT_ALIGN; }

VITDEF void *vit_arena_alloc(vit_arena *a, size_t bytes) {
    size_t start = vit__arena_next(a), end;
    if (start < a->used || !vit__add_ok(start, bytes, &end) || end > a->size) {
        /* what is left after aligning the start, as the allocation sees it */
        vit__fail(VIT_ERR_OOM,
                  "arena full: needed %zu bytes, %zu available (%zu used of %zu, the next allocation aligned to %d)",
                  bytes, start >= a->used && a->size > start ? a->size - start : (size_t)0, a->used, a->size,
                  VIT_ALIGN);
        return NULL;
    }
    a->used = end;
    if (end > a->peak) a->peak = end;
    /* Counting arenas hand out fake, aligned, non-NULL addresses. */
    return a->base ? (void *)(a->base + start) : (void *)(uintptr_t)(VIT_ALIGN + start);
}

VITDEF size_t vit_arena_mark(const vit_arena *a) { return a->used; }
VITDEF void vit_arena_rewind(vit_arena *a, size_t mark) { if (mark <= a->used) a->used = mark; }
VITDEF void vit_arena_reset(vit_arena *a) { a->used = 0; }

VITDEF void vit_arena_free(vit_arena *a) {
    if (a->owned && a->base) {
        void *raw;
        memcpy(&raw, a->base - sizeof(void *), sizeof raw);
        VIT_FREE(raw);
    }
    memset(a, 0, sizeof *a);
}

/* ---- tensor ---- */

VITDEF vit_result vit_tensor_init(vit_arena *a, vit_tensor *t, int32_t ndim, const int32_t *shape) {
    size_t n = 1, bytes;
    int32_t i;
    if (!a || !t || ndim < 1 || ndim > VIT_MAX_DIMS || !shape)
        return vit__fail(VIT_ERR_ARG, "tensor: ndim %d outside 1..%d", (int)ndim, VIT_MAX_DIMS);
    for (i = 0; i < ndim; i++) {
        if (shape[i] < 1) return vit__fail(VIT_ERR_SHAPE, "tensor: dimension %d is %d", (int)i, (int)shape[i]);
        if (!vit__mul_ok(n, (size_t)shape[i], &n))
            return vit__fail(VIT_ERR_OVERFLOW, "tensor: element count overflows");
    }
    if (!vit__mul_ok(n, sizeof(float), &bytes)) return vit__fail(VIT_ERR_OVERFLOW, "tensor: byte size overflows");
    t->data = (float *)vit_arena_alloc(a, bytes);
    if (!t->data) return VIT_ERR_OOM;
    t->ndim = ndim;
    for (i = 0; i < VIT_MAX_DIMS; i++) t->shape[i] = i < ndim ? shape[i] : 1;
    t->name = NULL;
    t->dtype = VIT_DTYPE_F32;
    t->q = NULL;
    t->scale = NULL;
    t->pack = NULL;
    t->act_bits = 0;
    return VIT_OK;
}

VITDEF size_t vit_tensor_numel(const vit_tensor *t) {
    size_t n = 1;
    int32_t i;
    for (i = 0; i < t->ndim; i++) n *= (size_t)t->shape[i];
    return n;
}

VITDEF vit_tensor vit_tensor_view(const vit_tensor *t, int32_t i) {
    vit_tensor v;
    int32_t d;
    memset(&v, 0, sizeof v);
    if (!t || !t->data || t->ndim < 2 || t->ndim > VIT_MAX_DIMS || i < 0 || i >= t->shape[0])
        return v; /* data NULL, ndim 0 */
    v.ndim = t->ndim - 1;
    for (d = 0; d < VIT_MAX_DIMS; d++) v.shape[d] = d + 1 < t->ndim ? t->shape[d + 1] : 1;
    v.data = t->data ? t->data + (size_t)i * vit_tensor_numel(&v) : NULL;
    v.name = t->name;
    v.dtype = t->dtype;
    if (t->q) v.q = (const char *)t->q + (size_t)i * vit_tensor_numel(&v) * (t->dtype == VIT_DTYPE_BF16 ? 2 : 1);
    if (t->scale) v.scale = t->dtype == VIT_DTYPE_I8 && t->ndim == 2 ? t->scale + i : t->scale;
    return v;
}

VITDEF const char *vit_tensor_shape_str(const vit_tensor *t, char *buf, size_t n) {
    size_t used = 0;
    int32_t i;
    if (!n) return buf;
    buf[0] = 0;
    used += (size_t)snprintf(buf, n, "[");
    for (i = 0; i < t->ndim && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, i ? ",%d" : "%d", (int)t->shape[i]);
    if (used < n) snprintf(buf + used, n - used, "]");
    return buf;
}

static vit_result vit__tensor4(vit_arena *a, vit_tensor *t, int32_t ndim, int32_t d0, int32_t d1, int32_t d2,
                               int32_t d3) {
    int32_t s[4];
    s[0] = d0; s[1] = d1; s[2] = d2; s[3] = d3;
    return vit_tensor_init(a, t, ndim, s);
}

/* ---- kernels: matrix multiply ---- */
/* Every dense layer and both attention products go through one GEMM:
   y[m][n] = alpha * sum_k x[m][k] w[n][k] + b[n], with w in nn.Linear's
   (N, K) layout, used where it lies in the file (zero-copy loads).

   The fast path is the BLIS/GotoBLAS design: w is copied, KC rows of k at a
   time, into a panel of NR = 2 vectors of columns (k-major, so one k step
   is two aligned-size vector loads), which stays in L1 while an MR x NR
   register tile walks down the rows of x, broadcasting one x value per row
   and k. MR x 2 accumulators fill the register file (12 x 2 of 32 with
   AVX-512, 6 x 2 of 16 with AVX2) and hide the FMA latency. Packing goes
   through 8 x 8 register transposes; still, a loaded model's dense weights
   are packed once at load (vit__pack_weight), so the tiles read each block
   as one run of memory asked for a block ahead, and a ViT-B/16 forward at
   batch 1 is 9% faster. (An earlier try measured under 1%: without asking
   for the next block, the tiles waited for memory instead of the packing.)
   The panels are the same either way, and so are the bits. Threads split
   the panels, and every output is summed in the same order (k ascending in
   KC blocks, one FMA per k) whatever thread or tile computes it, so
   results are bit-identical for any thread count. Against the plain
   left-to-right _ref sum the difference is rounding only: |fast - ref| <=
   ~K * 2^-24 * sum_k |x w|.

   Weights that stay BF16 or I8 (vit_tensor.dtype) define their product as
   follows, in every build (vit__matmul_ref is the specification):
   - BF16: each x is rounded to bf16 (to nearest, ties to even) and the
     exact products bf16(x) w are summed in f32, as vdpbf16ps does:
     y = alpha * sum_k bf16(x[m][k]) w[n][k] + b[n]. |fast - ref| is
     rounding order only, as for F32.
   - I8: w[n][k] = ws[n] q[n][k]; each row of x is quantised when the
     product runs, asymmetric u8 (vpdpbusd multiplies u8 by s8, and after a
     GELU a row lies in [-0.17, max]: a symmetric s8 scale would leave half
     its steps unused): [lo, hi] = [min(x, 0), max(x, 0)] onto 0..255,
     sx = (hi - lo) / 255 (hi / 255 - lo / 255 when hi - lo overflows),
     zp = rne(-lo / sx), xq = clamp(rne(x / sx) + zp, 0, 255). S =
     sum_k (xq - zp) q[n][k] is exact in int32 (K <= 65536, the loader
     refuses more), and y = alpha * (S * (sx ws[n])) + b[n]: the
     dot-product kernels equal the reference bit for bit but for the final
     multiply-add's rounding. A row holding a NaN or an Inf has sx = NaN
     and xq = zp = 0: its outputs are NaN. With xmax = 127 (the weight's
     act_bits 7) the same onto 0..127: sx = (hi - lo) / 127.
   x is converted once per product, into scratch the caller takes from its
   arena (vit__mm_scratch bytes). Where the CPU has the dot-product
   instructions (AVX512_BF16 vdpbf16ps, AVX512_VNNI or AVX-VNNI vpdpbusd,
   ARMv8.2 sdot: s8 by s8, so x is kept as xq - 128 and zp - 128 corrects;
   for I8 also AVX2's vpmaddubsw, on xq - 128 as well, see vit__vi_dot4,
   or on xq itself where xmax is 127, vit__x_narrow)
   the panel holds pairs or quads of k per column and the tile broadcasts
   one pair or quad of x per row; elsewhere (BF16 on AVX2, NEON without
   dotprod, WASM) the packing widens w to f32 and the f32 tile runs on x as
   converted (bf16-rounded, or xq - zp as exact floats with sx, ws applied
   at the end). */

/* Fused epilogues: what a product does to each finished output tile while
   it is still in L1, y = act(y) + r, instead of a separate pass over the
   whole output (a 197 x 3072 GELU, a residual add). act is computed exactly
   as vit_k_relu and vit_k_gelu compute it and the add is one rounding, so a
   fused layer equals the unfused one bit for bit. */
#define VIT__EPI_NONE (-1)
typedef struct vit__epi {
    int act;        /* a vit_act, or VIT__EPI_NONE */
    const float *g; /* per-column scale after act (layer scale's gamma), or NULL */
    const float *r; /* residual added last (never y itself), or NULL */
    int ldr;
} vit__epi;
/* Row m of e's residual from column n0, or NULL (no epilogue, or none added). */
static VIT__INLINE const float *vit__epi_r(const vit__epi *e, int m, int n0) {
    return e && e->r ? e->r + (size_t)m * e->ldr + n0 : NULL;
}
static void vit__epi_tile(float *y, int ldy, const vit__epi *e, int m0, int n0, int rows, int n);

/* A LayerNorm (weight, bias, eps) that a BF16 or I8 product applies to each
   row of its x as it converts it (vit__xs_fill), an F32 one (or a BF16 one on
   the widening tiles) as it packs it (vit__xp_fill): LN(x) is never written
   out and read back (at 518 px 2 MB twice a block). The row goes through
   vit__layernorm_row, as vit_k_layernorm's rows do: the same bits. */
#define VIT__LN_ROW_MAX 2048 /* the longest row so normalised, on the stack */
typedef struct vit__ln {
    const float *w, *b;
    float eps;
} vit__ln;

/* One product as its caller describes it. vit__matmul is the one entry:
   vit_k_matmul, every module's dense layer and attention's P V in every
   precision (V's panels packed by the attention) go through it, and it
   picks the path. Attention's q kᵀ runs the same tiles in a loop of its own
   only because each block of scores goes straight to the softmax
   (vit__att_exp_f32, vit__att_exp_tiles, vit__att_exp_amx). */
typedef struct vit__mm {
    float *y;               /* (M, N), row stride ldy */
    const float *x;         /* (M, K), row stride ldx */
    const float *w;         /* (N, K), row stride ldw: nn.Linear's layout */
    const float *b;         /* (N), or NULL */
    int M, K, N;
    int ldy, ldx, ldw;
    float alpha;            /* y = alpha * x w^T + b */
    int threaded;           /* 0: the caller runs inside a parallel region already */
    int blocked_rows;       /* 1: the caller splits rows into blocks of >= 4 and needs the same
                               bits whatever the split: no few-rows path */
    const vit__epi *e;      /* the fused epilogue, or NULL */
    int wt;                 /* VIT_DTYPE_* of the weights: F32 reads w, BF16 and I8 read wq */
    const void *wq;         /* BF16 bits (uint16_t) or I8 values (N, K), row stride ldw; F32 with panel: the
                               whole panels packed (attention's K and V; a loaded weight's, where wq is w), the
                               last partial one read from w */
    const float *ws;        /* I8: (N) scales of w's rows */
    int xmax;               /* I8: x's rows rounded to 0..xmax: 255, or 127 (vit_tensor.act_bits 7) */
    int panel;              /* 0: wq is row-major; VIT__NR: its whole panels are packed (vit__pack_weight) */
    int tail;               /* BF16 with panel: the last partial panel packed too, its columns past N zero
                               (attention's V: vit__att_task_bf16) */
    const int32_t *wsums;   /* I8 with panel: the packed panels' column sums, NR per k block */
    void *xs;               /* vit__mm_scratch(wt, M, K) bytes for x as converted (BF16, I8) or packed (F32, BF16
                               on the widening tiles: vit__xp_use), or NULL */
    int xs_ld;              /* BF16: 0, vit__matmul converts x into xs; else xs holds x converted already
                               (attention's probabilities), rows xs_ld groups of 4 bytes apart, zero padded as
                               vit__xs_row and vit__xs_rows pad them; x unread */
    int nn;                 /* F32 only: w is (K, N), row stride ldw, and y = alpha x w + b: the reverse
                               pass's dx = dy W without a transposed copy of W */
    int nnp;                /* nn: w is a loaded weight packed in panels of nnp rows (vit__pack_weight), 0: not */
    const vit__ln *ln;      /* (vit__ln_fuses) x's rows normalised as BF16 and I8 convert them and F32 packs them
                               (vit__xp_fill); NULL: as they are */
    uint16_t *yb;           /* BF16 on the wide tiles, where vit__mm_yb says so: the outputs (the epilogue's) rounded
                               to bf16 into yb, row stride ldyb, as the next product's x converted (its xs) or
                               the attention's q, k, v (vit__mha_qb); I8 where vit__mm_q8 says so: the I8
                               attention's operands (vit__q8_att_out); y unwritten. NULL: y */
    int ldyb;
    float *yqs;             /* I8 with yb: each row's q and k scales, a head's each (2 N / 3 / (2 NR) a row) */
    int xp;                 /* 1 where vit__gemm_tiles packed x into xs for the tiles (vit__xp_use) */
} vit__mm;

/* A dense layer: contiguous rows, alpha 1, threads allowed, no epilogue;
   callers change the fields that differ. */
static vit__mm vit__mm_dense(float *y, const float *x, const float *w, const float *b, int M, int K, int N) {
    vit__mm p;
    p.y = y; p.x = x; p.w = w; p.b = b;
    p.M = M; p.K = K; p.N = N;
    p.ldy = N; p.ldx = K; p.ldw = K;
    p.alpha = 1.0f;
    p.threaded = 1;
    p.blocked_rows = 0;
    p.e = NULL;
    p.wt = VIT_DTYPE_F32;
    p.wq = NULL;
    p.xp = 0;
    p.ws = NULL;
    p.xmax = 255;
    p.panel = 0;
    p.tail = 0;
    p.wsums = NULL;
    p.xs = NULL;
    p.xs_ld = 0;
    p.nn = 0;
    p.nnp = 0;
    p.ln = NULL;
    p.yb = NULL;
    p.ldyb = 0;
    p.yqs = NULL;
    return p;
}

/* A product's row blocks, their bounds at multiples of align spread evenly over M. (Blocks of a fixed count of
   rows with the rest in the last left it short: ViT-B/16 at batch 8 had nine blocks of 168 rows and one of 64,
   and of two threads one ran 840 rows, the other 736.) */
typedef struct vit__mm_rows {
    const vit__mm *p;
    int blocks, align;
} vit__mm_rows;
static vit__mm_rows vit__mm_rows_of(const vit__mm *p, int blocks, int align) {
    vit__mm_rows r;
    r.p = p;
    r.blocks = blocks;
    r.align = align;
    return r;
}
static int vit__row_bound(const vit__mm_rows *r, int b) {
    return b >= r->blocks ? r->p->M : (int)((long long)r->p->M * b / r->blocks / r->align * r->align);
}

/* Bytes an element of a weight of type wt takes as stored: F32 4, BF16 2, I8 1. */
static int vit__dtype_bytes(int wt) { return wt == VIT_DTYPE_F32 ? 4 : wt == VIT_DTYPE_BF16 ? 2 : 1; }

/* bf16 bits of a finite x, rounded to nearest, ties to even. */
static uint16_t vit__bf16_round(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static float vit__bf16_float(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* An I8 product's quantisation of one row of x (see above) from the row's
   lo = min(x, 0) and hi = max(x, 0). A row of zeros (or of values below
   1e-30) gets scale 1 and quantises to zp = 0. A row holding a NaN or an
   Inf (finite = 0) gets scale NaN, zp = 0, and quantises to zeros, so its
   outputs are NaN where F32's are not finite either, and no non-finite
   value reaches an int conversion. A range past FLT_MAX (hi - lo
   overflowing) is divided before it is subtracted. */
static void vit__q8_scale(float lo, float hi, int finite, int xmax, float *sx, float *inv, int32_t *zp) {
    float q = (float)xmax, s = isfinite(hi - lo) ? (hi - lo) / q : hi / q - lo / q;
    if (!finite) {
        *sx = NAN;
        *inv = 0.0f;
        *zp = 0;
        return;
    }
    if (!(s > 1e-30f)) s = 1.0f;
    *sx = s;
    *inv = 1.0f / s;
    *zp = (int32_t)nearbyintf(-lo * *inv);
}

/* xq - zp as a float (exact: -xmax..xmax); 0 in a row that is not finite
   (inv = 0, see vit__q8_scale). */
static float vit__q8(float x, float inv, int32_t zp, int xmax) {
    float r = inv == 0.0f ? 0.0f : nearbyintf(x * inv) + (float)zp;
    return (r < 0.0f ? 0.0f : r > (float)xmax ? (float)xmax : r) - (float)zp;
}

/* The I8 attention's q kᵀ (vit__att_mode 2 and 3): each row of a head's q
   and k (HS values) rounded to int8 on its own symmetric scale, s = max|x|
   / qmax (127; mode 3's q 63: vit__att_mode says why) (vit__q8s_row;
   vit__attention_ref holds it to these): returns s and sets inv = 1 / s. A
   row of zeros or of values below 1e-30 gets s = 1 (its q zeros), one
   holding a NaN or an Inf s = NaN and inv = 0 (its q zeros, its scores
   NaN), as vit__q8_scale. */
static float vit__q8s_scale(float amax, int finite, int qmax, float *inv) {
    float s = amax / (float)qmax;
    if (!finite) {
        *inv = 0.0f;
        return NAN;
    }
    if (!(s > 1e-30f)) s = 1.0f;
    *inv = 1.0f / s;
    return s;
}

/* x's int8 on that scale: round(x inv) to nearest, ties to even, within +-qmax (0 where inv is 0). */
static int vit__q8s(float x, float inv, int qmax) {
    float r = inv == 0.0f ? 0.0f : nearbyintf(x * inv), b = (float)qmax;
    return (int)(r < -b ? -b : r > b ? b : r);
}

/* Threads for a product: one below 65536 multiply-adds or inside a caller's task. */
static int vit__mm_threads(const vit__mm *p) {
    double macs = (double)p->M * p->K * p->N;
    return p->threaded && macs >= 65536.0 ? vit__busy_threads(macs, VIT__BUSY_MACS) : 1;
}

/* The specification: one left-to-right sum per output, then alpha and b
   (no epilogue); BF16 and I8 weights as the section's top says. */
static void vit__matmul_ref(const vit__mm *p) {
    int m, n, k;
    for (m = 0; m < p->M; m++) {
        const float *xm = p->x + (size_t)m * p->ldx;
        float lo = 0.0f, hi = 0.0f, sx = 1.0f, inv = 1.0f;
        int32_t zp = 0;
        int finite = 1;
        if (p->wt == VIT_DTYPE_I8) {
            for (k = 0; k < p->K; k++) {
                lo = xm[k] < lo ? xm[k] : lo;
                hi = xm[k] > hi ? xm[k] : hi;
                finite &= isfinite(xm[k]) != 0;
            }
            vit__q8_scale(lo, hi, finite, p->xmax, &sx, &inv, &zp);
        }
        for (n = 0; n < p->N; n++) {
            float s = 0.0f;
            if (p->wt == VIT_DTYPE_I8) {
                const int8_t *wn = (const int8_t *)p->wq + (size_t)n * p->ldw;
                int64_t acc = 0;
                for (k = 0; k < p->K; k++) acc += (int64_t)vit__q8(xm[k], inv, zp, p->xmax) * wn[k];
                s = (float)acc * (sx * p->ws[n]);
            } else if (p->wt == VIT_DTYPE_BF16) {
                const uint16_t *wn = (const uint16_t *)p->wq + (size_t)n * p->ldw;
                for (k = 0; k < p->K; k++) s += vit__bf16_float(vit__bf16_round(xm[k])) * vit__bf16_float(wn[k]);
            } else if (p->nn) {
                for (k = 0; k < p->K; k++) s += xm[k] * p->w[(size_t)k * p->ldw + n];
            } else {
                const float *wn = p->w + (size_t)n * p->ldw;
                for (k = 0; k < p->K; k++) s += xm[k] * wn[k];
            }
            p->y[(size_t)m * p->ldy + n] = p->alpha * s + (p->b ? p->b[n] : 0.0f);
        }
    }
}

VITDEF void vit_k_matmul_ref(float *y, const float *x, const float *w, const float *b, int M, int K, int N) {
    vit__mm p = vit__mm_dense(y, x, w, b, M, K, N);
    vit__matmul_ref(&p);
}

#ifndef VIT_NO_SIMD
#if VIT__VW == 16
#define VIT__MR 12
#else
#define VIT__MR 6
#endif
#define VIT__NR (2 * VIT__VW)
#define VIT__KC (8192 / VIT__NR) /* a KC x NR panel is 32 KiB: it stays in L1 */
#ifndef VIT__MC
#define VIT__MC (32 * VIT__MR) /* rows of x a packed F32 panel runs its k blocks over (vit__gemm_panels) */
#endif
#ifndef VIT__MC_BYTES
#define VIT__MC_BYTES vit__mc_bytes() /* x in a row block packed F32 panels take in turn (vit__gemm_row_blocks) */
#define VIT__MC_AUTO
#endif
/* F32 products with scratch (a dense layer's, vit__mm.xs) pack x for the tiles on AVX2 where it pays
   (vit__xp_use, vit__xp_pays), and the f32 attention its q (vit__att_exp_f32): where measured (see vit__xp_pack) */
#if VIT__VW == 8 && defined(SIMDE_X86_AVX2_NATIVE)
#define VIT__XP 1
#else
#define VIT__XP 0
#endif
#ifndef VIT__XP_KMAX
#define VIT__XP_KMAX 1024
#endif

/* What a tile reads and writes: rows [0, mr) of x against the packed
   panel, into y (columns [0, nv)); first: y holds nothing yet; last: the
   block that finishes with alpha and the bias. The F32 tile reads xf and bf
   (floats, ldx floats a row); the dot-product tiles x and bp, pairs (BF16)
   or quads (I8) of k per uint32, kc counting them. */
typedef struct vit__tl {
    float *y;
    int ldy;
    const uint32_t *x;         /* the tile's first row, at k0 */
    int ldx;                   /* uint32 (F32: floats) per row of x */
    const uint32_t *bp;        /* the panel: kc steps of NR columns */
    const float *xf, *bf;      /* F32: x's first row at k0, and the panel */
    const unsigned char *const *pf; /* F32: npf lines to ask for, one every 8 k (see vit__gemm_block) */
    const unsigned char *pf0;  /* F32 and the wide tiles, or else: the npf lines are those from pf0 on, one run */
    int npf;
    int kc, first, last, nv;
    float alpha;
    const float *b;            /* bias from n0, or NULL */
    const float *sx, *ws;      /* I8: the rows' scales from m0, the columns' from n0 */
    const int32_t *zp, *wsum;  /* I8: the rows' zero points from m0, the panel's column sums over this block */
    const vit__epi *e;         /* whole panels: the epilogue, done as the tile stores (I8: its finish; F32 and
                                  BF16: with no activation, vit__tile_out_row), else NULL */
    const float *g, *r;        /* and its layer scale from n0 and residual from (m0, n0), or NULL */
    int stream;                /* I8: the finished y goes to memory past the caches (see vit__gemm_block) */
    int narrow;                /* I8: x is held as xq, not xq - VIT__I8_XOFF (vit__x_narrow) */
    int fy;                    /* a later block starts from y's sums where VIT__SUMS_FROM_Y does not say so (AVX2's
                                  F32 and widened BF16: VIT__LONG_FROM_Y) */
} vit__tl;

/* The tiles' lists of MR functions, for their tables. */
#if VIT__MR > 6
#define VIT__MRS(X, f) \
    X(f, 1) X(f, 2) X(f, 3) X(f, 4) X(f, 5) X(f, 6) X(f, 7) X(f, 8) X(f, 9) X(f, 10) X(f, 11) X(f, 12)
#else
#define VIT__MRS(X, f) X(f, 1) X(f, 2) X(f, 3) X(f, 4) X(f, 5) X(f, 6)
#endif
#define VIT__TL_DEF(f, mr)                                            \
    static void f##2_##mr(const vit__tl *t) { f(mr, 2, t); }          \
    static void f##1_##mr(const vit__tl *t) { f(mr, 1, t); }
#define VIT__TL_WIDE(f, mr) f##2_##mr,
#define VIT__TL_NARROW(f, mr) f##1_##mr,
typedef void (*vit__tl_fn)(const vit__tl *);

/* The F32 tile (vit__tl's xf and bf). mr and nvec (vectors of columns:
   2, or 1 when nv <= VIT__VW, a narrow last panel or a 16-wide product)
   are constants after inlining, so rows >= mr and the unused vector vanish
   and every accumulator is a register. The narrow tile runs the same FMAs
   for its columns as the wide one, so the bits match. */
/* A later k block's F32 or BF16 tile starts from the sums so far, which y keeps between blocks, on AVX-512: each
   output is then one sum over k in order, whatever the blocks, so a panel packed at load takes longer blocks than
   one packed into a buffer here (vit__kc_at) and gives the same bits. AVX2's F32 and BF16 tiles start from y too
   (vit__tl.fy, VIT__LONG_FROM_Y), for the same longer blocks. Elsewhere a block's sums are added to y's at its end
   (another order a block size; the blocks are the same for every panel there). */
#define VIT__SUMS_FROM_Y (VIT__VW == 16)
/* Products of weight type wt whose panels packed at load run blocks of 2 vit__kc (vit__kc_at) on the F32 tile,
   every block after the first starting from y's sums (vit__tl.fy): AVX2's F32 and, without vdpbf16ps, BF16. */
#define VIT__LONG_FROM_Y(wt)                                                                                   \
    (!VIT__SUMS_FROM_Y && (((wt) == VIT_DTYPE_F32 && VIT__XP) || ((wt) == VIT_DTYPE_BF16 && VIT__BF16_WIDE)))

/* A tile's row yi of sums over a whole panel (ca, cb: its two vectors of columns) to y: what y holds added when
   add (a later block, VIT__SUMS_FROM_Y 0), alpha and the bias b on the last block, then (the wide tiles) the
   epilogue's layer scale g and residual r, each one rounding as vit__epi_tile's: the same bits without a pass of
   the epilogue's own over y (ViT-B/16 BF16 at B = 8, one thread, eight alternating pairs: 0.989x). Its callers'
   fields come as values, read before any store: read through the tile's struct after one (a vector store may
   alias anything), they were loaded again for each row. */
static VIT__INLINE void vit__tile_out_row(float *yi, const float *b, int add, int last, float alpha, vit__vf ca,
                                          vit__vf cb, const float *g, const float *r) {
    if (add) {
        ca = vit__v_add(vit__v_load(yi), ca);
        cb = vit__v_add(vit__v_load(yi + VIT__VW), cb);
    }
    if (last) {
        vit__vf va = vit__v_set1(alpha);
        ca = vit__v_add(vit__v_mul(va, ca), b ? vit__v_load(b) : vit__v_zero());
        cb = vit__v_add(vit__v_mul(va, cb), b ? vit__v_load(b + VIT__VW) : vit__v_zero());
        if (g) {
            ca = vit__v_mul(ca, vit__v_load(g));
            cb = vit__v_mul(cb, vit__v_load(g + VIT__VW));
        }
        if (r) {
            ca = vit__v_add(ca, vit__v_load(r));
            cb = vit__v_add(cb, vit__v_load(r + VIT__VW));
        }
    }
    vit__v_store(yi, ca);
    vit__v_store(yi + VIT__VW, cb);
}

/* A partial panel's row (nv < NR columns) into and out of a tile's registers, through o. Called, not inlined: in
   each of the ~100 tiles GCC -O3 vectorised and unswitched these loops (on add, last, b), the tiles grew 4-6x and
   vit.h's -O3 compile took twice as long; they run once a row of a last panel, never in the k loop. */
static VIT__NOINLINE void vit__tile_in_part(float *o, const float *yi, int nv) {
    int j;
    for (j = 0; j < VIT__NR; j++) o[j] = j < nv ? yi[j] : 0.0f;
}
static VIT__NOINLINE void vit__tile_out_part(float *yi, const float *o, int nv, int add, int last, float alpha,
                                             const float *b) {
    int j;
    for (j = 0; j < nv; j++) {
        float s = add ? yi[j] + o[j] : o[j];
        yi[j] = last ? alpha * s + (b ? b[j] : 0.0f) : s;
    }
}

#define VIT__ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
/* A later block's tile: its rows' sums so far from y (fy: VIT__SUMS_FROM_Y or vit__tl.fy), or asked for now, to be
   added at the end, when y is large (a batch) and they come back from far away */
#define VIT__FROM_Y(i)                                                                                \
    if (mr > i && !first && !fy) {                                                                    \
        VIT__PREFETCH(y + (size_t)i * ldy);                                                           \
        VIT__PREFETCH(y + (size_t)i * ldy + VIT__NR - 1);                                             \
    } else if (mr > i && !first) {                                                                    \
        const float *yi = y + (size_t)i * ldy;                                                        \
        if (nvec > 1 && nv == VIT__NR) {                                                              \
            c##i##a = vit__v_load(yi);                                                                \
            c##i##b = vit__v_load(yi + VIT__VW);                                                      \
        } else {                                                                                      \
            float o[VIT__NR];                                                                         \
            vit__tile_in_part(o, yi, nv);                                                             \
            c##i##a = vit__v_load(o);                                                                 \
            if (nvec > 1) c##i##b = vit__v_load(o + VIT__VW);                                         \
        }                                                                                             \
    }
/* A whole panel's last block (gemm_block set t->e: an epilogue without an activation) ends in the tile's store:
   its layer scale eg and residual rows er (eld floats apart) go to vit__tile_out_row, as in the wide tiles. */
#define VIT__OUT_EPI                                                 \
    const float *eg = t->e ? t->g : NULL, *er = t->e ? t->r : NULL; \
    int eld = t->e ? t->e->ldr : 0;
/* Row i's step of the F32 tiles at k: its x broadcast (x[i ldx + k xk]: rows ldx apart, or packed, VIT__MR
   rows of one k together), times the step's vectors of w b0 (and b1 where nvec > 1) */
#define VIT__FMA_ROW(i)                                                \
    if (mr > i) {                                                      \
        vit__vf a = vit__v_set1(x[(size_t)i * ldx + (size_t)k * xk]);  \
        c##i##a = vit__v_fma(a, b0, c##i##a);                          \
        if (nvec > 1) c##i##b = vit__v_fma(a, b1, c##i##b);            \
    }
static VIT__INLINE void vit__tile_x(const int mr, const int nvec, const int xp, const vit__tl *t) {
    float *y = t->y, alpha = t->alpha;
    const float *x = t->xf, *bp = t->bf, *b = t->b;
    const unsigned char *const *pf = t->pf, *pf0 = t->pf0;
    const int xk = xp ? VIT__MR : 1; /* packed: x[i + k MR], offsets the compiler knows (vit__xp_fill) */
    int k, ldy = t->ldy, ldx = xp ? 1 : t->ldx, kc = t->kc, first = t->first, last = t->last, nv = t->nv,
           npf = t->npf;
    int fy = VIT__SUMS_FROM_Y || t->fy, add = !first && !fy;
#define VIT__DECL(i) vit__vf c##i##a = vit__v_zero(), c##i##b = vit__v_zero();
    VIT__OUT_EPI
    VIT__ROWS(VIT__DECL)
    VIT__ROWS(VIT__FROM_Y)

    /* the products: one rank-1 update of the accumulators per k, and every
       8 k one line of the weights the next block reads, asked for outside
       the inner loop (a test and branch each k had made it 27 instructions
       a k, not 23; ViT-B/16 f32 at B = 1 on a Zen 3, 16 alternating pairs:
       0.98x in the median, this machine's noise about 10%; the same bits) */
    for (k = 0; k < kc;) {
        int k8 = k + 8 < kc ? k + 8 : kc;
        if (k / 8 < npf) VIT__PREFETCH(pf0 ? pf0 + (size_t)(k / 8) * 64 : pf[k / 8]);
        for (; k < k8; k++) {
            vit__vf b0 = vit__v_load(bp + (size_t)k * VIT__NR),
                    b1 = nvec > 1 ? vit__v_load(bp + (size_t)k * VIT__NR + VIT__VW) : b0;
            VIT__ROWS(VIT__FMA_ROW)
        }
    }

    /* alpha and the bias on the last block */
#define VIT__OUT(i)                                                                     \
    if (mr > i) {                                                                       \
        float *yi = y + (size_t)i * ldy;                                                \
        if (nvec > 1 && nv == VIT__NR) {                                                \
            vit__tile_out_row(yi, b, add, last, alpha, c##i##a, c##i##b, eg, er ? er + (size_t)i * eld : NULL); \
        } else {                                                                        \
            float o[VIT__NR];                                                           \
            vit__v_store(o, c##i##a);                                                   \
            vit__v_store(o + VIT__VW, nvec > 1 ? c##i##b : vit__v_zero()); /* (GCC -O3: read) */ \
            vit__tile_out_part(yi, o, nv, add, last, alpha, b);                         \
        }                                                                               \
    }
    VIT__ROWS(VIT__OUT)
}
static VIT__INLINE void vit__tile(const int mr, const int nvec, const vit__tl *t) { vit__tile_x(mr, nvec, 0, t); }
VIT__MRS(VIT__TL_DEF, vit__tile)
static const vit__tl_fn vit__tiles[2][VIT__MR + 1] = {{NULL, VIT__MRS(VIT__TL_NARROW, vit__tile)},
                                                      {NULL, VIT__MRS(VIT__TL_WIDE, vit__tile)}};
#if VIT__XP
static VIT__INLINE void vit__tile_xp(const int mr, const int nvec, const vit__tl *t) { vit__tile_x(mr, nvec, 1, t); }
VIT__MRS(VIT__TL_DEF, vit__tile_xp)
static const vit__tl_fn vit__tiles_xp[2][VIT__MR + 1] = {{NULL, VIT__MRS(VIT__TL_NARROW, vit__tile_xp)},
                                                         {NULL, VIT__MRS(VIT__TL_WIDE, vit__tile_xp)}};
#endif

/* Eight rows of eight 32-bit lanes transposed in registers: the classic
   AVX network (unpack, shuffle, swap halves), 24 shuffles for 64 values
   that one at a time would cost 64 loads and 64 stores. The shuffles move
   bits only, so the I8 panels' quads go through it as well as floats. */
static VIT__INLINE void vit__transpose8_v(simde__m256 *r) {
    simde__m256 t0 = simde_mm256_unpacklo_ps(r[0], r[1]), t1 = simde_mm256_unpackhi_ps(r[0], r[1]),
                t2 = simde_mm256_unpacklo_ps(r[2], r[3]), t3 = simde_mm256_unpackhi_ps(r[2], r[3]),
                t4 = simde_mm256_unpacklo_ps(r[4], r[5]), t5 = simde_mm256_unpackhi_ps(r[4], r[5]),
                t6 = simde_mm256_unpacklo_ps(r[6], r[7]), t7 = simde_mm256_unpackhi_ps(r[6], r[7]);
    simde__m256 u0 = simde_mm256_shuffle_ps(t0, t2, 0x44), u1 = simde_mm256_shuffle_ps(t0, t2, 0xEE),
                u2 = simde_mm256_shuffle_ps(t1, t3, 0x44), u3 = simde_mm256_shuffle_ps(t1, t3, 0xEE),
                u4 = simde_mm256_shuffle_ps(t4, t6, 0x44), u5 = simde_mm256_shuffle_ps(t4, t6, 0xEE),
                u6 = simde_mm256_shuffle_ps(t5, t7, 0x44), u7 = simde_mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = simde_mm256_permute2f128_ps(u0, u4, 0x20);
    r[1] = simde_mm256_permute2f128_ps(u1, u5, 0x20);
    r[2] = simde_mm256_permute2f128_ps(u2, u6, 0x20);
    r[3] = simde_mm256_permute2f128_ps(u3, u7, 0x20);
    r[4] = simde_mm256_permute2f128_ps(u0, u4, 0x31);
    r[5] = simde_mm256_permute2f128_ps(u1, u5, 0x31);
    r[6] = simde_mm256_permute2f128_ps(u2, u6, 0x31);
    r[7] = simde_mm256_permute2f128_ps(u3, u7, 0x31);
}

/* dst[k NR + j] = src[j ldw + k] for an 8 x 8 block of floats. */
static VIT__INLINE void vit__transpose8(float *dst, const float *src, int ldw) {
    simde__m256 r[8];
    int i;
    for (i = 0; i < 8; i++) r[i] = simde_mm256_loadu_ps(src + (size_t)i * ldw);
    vit__transpose8_v(r);
    for (i = 0; i < 8; i++) simde_mm256_storeu_ps(dst + (size_t)i * VIT__NR, r[i]);
}

/* BF16 and I8 weights (see the section's top). The dot-product kernels
   run where the compiler targets the instructions, and under
   SIMDE_NO_NATIVE through SIMDe's portable versions, so that every machine
   tests them (AVX2 has an exact vpmaddubsw form for I8); elsewhere the
   f32 tiles run on widened panels. */
#if VIT__VW == 16 && defined(SIMDE_X86_AVX512BF16_NATIVE)
#define VIT__DOT_BF16 1
#elif VIT__VW == 8 && defined(SIMDE_NO_NATIVE)
#define VIT__DOT_BF16 1
#else
#define VIT__DOT_BF16 0
#endif
/* Without it (AVX2, NEON, WebAssembly, AVX-512 before BF16) a BF16 weight is packed at load all the same, as the
   dot-product tiles' panels of pairs, and the f32 tile widens each pair as it reads it (vit__tile_bfw): a shift
   or a mask a vector of columns and k. Each product had widened every panel block into a buffer of floats, and
   the BF16 file ran slower than the F32 one (ViT-B/16 at B = 1, one thread, Zen 3: 0.42-0.45 s against 0.40);
   packed, 0.91x that at B = 1, 0.90x at B = 8. The same sums in the same order: the same bits. */
#define VIT__BF16_WIDE (!VIT__DOT_BF16)
#if VIT__VW == 16 && defined(SIMDE_X86_AVX512VNNI_NATIVE)
#define VIT__DOT_I8 1
#define vit__vi_dot4(acc, a, b) simde_mm512_dpbusd_epi32(acc, a, b) /* acc + u8 a . s8 b, 4 per lane */
#elif VIT__VW == 8 && defined(__AVXVNNI__) && defined(SIMDE_X86_AVX2_NATIVE)
#define VIT__DOT_I8 1
#define vit__vi_dot4(acc, a, b) _mm256_dpbusd_avx_epi32(acc, a, b)
#elif VIT__VW == 8 && defined(SIMDE_NO_NATIVE)
#define VIT__DOT_I8 1
#define vit__vi_dot4(acc, a, b) simde_mm256_dpbusd_epi32(acc, a, b)
#elif VIT__VW == 8 && defined(SIMDE_ARM_NEON_A64V8_NATIVE) && defined(__ARM_FEATURE_DOTPROD)
#define VIT__DOT_I8 1
#define VIT__I8_XOFF 128 /* sdot multiplies s8 by s8: x is kept as xq - 128, S corrected by (zp - 128) w sums */
#elif VIT__VW == 8 && defined(SIMDE_X86_AVX2_NATIVE)
#define VIT__DOT_I8 1
#define VIT__I8_XOFF 128 /* as for sdot: vpmaddubsw on |x| and w with x's signs (below) */
#define VIT__I8_MADDUBS 1
#else
#define VIT__DOT_I8 0
#endif
#ifndef VIT__I8_XOFF
#define VIT__I8_XOFF 0
#endif
/* The I8 attention's q kᵀ in int8 with q on 7 bits and P V in f32 (vit__att_mode 3) */
#if VIT__DOT_I8 && !VIT__DOT_BF16
#define VIT__ATT_Q7 1
#else
#define VIT__ATT_Q7 0
#endif
/* The wide tiles (vit__tile2_f32, vit__tile2_bf16, vit__tile2_i8): their 24 sums, four vectors of w and a
   broadcast take AVX-512's 32 registers; with 16, the MR x NR tiles only. */
#if VIT__VW == 16 && VIT__MR == 12
#define VIT__WIDE 1
#else
#define VIT__WIDE 0
#endif
/* The AMX tiles are compiled in (vit__amx_ready asks the kernel at run time) */
#if defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__linux__) && defined(__x86_64__) && VIT__DOT_BF16 && \
    VIT__NR == 32 && !defined(VIT_NO_AMX)
#define VIT__AMX_BUILD 1
#else
#define VIT__AMX_BUILD 0
#endif

/* Integer lanes beside vit__vf's floats. */
#if VIT__VW == 16
typedef simde__m512i vit__vi;
#define vit__vi_load(p) simde_mm512_loadu_si512((const void *)(p))
#define vit__vi_store(p, v) simde_mm512_storeu_si512((void *)(p), v)
#define vit__vi_set1(s) simde_mm512_set1_epi32(s)
#define vit__vi_zero() simde_mm512_setzero_si512()
#define vit__vi_add(a, b) simde_mm512_add_epi32(a, b)
#define vit__vi_sub(a, b) simde_mm512_sub_epi32(a, b)
#define vit__vi_mul(a, b) simde_mm512_mullo_epi32(a, b)
#define vit__vi_and(a, b) simde_mm512_and_si512(a, b)
#define vit__vi_srl16(a) simde_mm512_srli_epi32(a, 16)
#define vit__vi_float(a) _mm512_cvtepi32_ps(a)        /* the values, converted (nor this) */
#define vit__vi_min(a, b) _mm512_min_epi32(a, b)
#define vit__vi_max(a, b) _mm512_max_epi32(a, b)
#define vit__v_round(a) _mm512_cvtps_epi32(a)          /* to nearest, ties to even */
#define vit__vi_store_u8(p, v) \
    _mm_storeu_si128((__m128i *)(void *)(p), _mm512_cvtepi32_epi8(v)) /* low bytes (nor these) */
#define vit__vi_store_u16(p, v) \
    _mm256_storeu_si256((__m256i *)(void *)(p), _mm512_cvtepi32_epi16(v)) /* low halves (not in SIMDe 0.7) */
#define vit__vi_load_u16(p) /* VW uint16 widened to int32 lanes (nor this) */ \
    _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(p)))
#define vit__vi_sll16(a) simde_mm512_slli_epi32(a, 16)
#define vit__vi_sll(a, n) simde_mm512_slli_epi32(a, n)
#if VIT__DOT_BF16
static VIT__INLINE vit__vf vit__v_dpbf16(vit__vf acc, vit__vi a, vit__vi b) { /* acc + a . b, pairs of bf16 per lane */
    simde__m512bh x, y;
    memcpy(&x, &a, sizeof x);
    memcpy(&y, &b, sizeof y);
    return simde_mm512_dpbf16_ps(acc, x, y);
}
#endif
#else
typedef simde__m256i vit__vi;
#define vit__vi_load(p) simde_mm256_loadu_si256((const void *)(p))
#define vit__vi_store(p, v) simde_mm256_storeu_si256((void *)(p), v)
#define vit__vi_set1(s) simde_mm256_set1_epi32(s)
#define vit__vi_zero() simde_mm256_setzero_si256()
#define vit__vi_add(a, b) simde_mm256_add_epi32(a, b)
#define vit__vi_sub(a, b) simde_mm256_sub_epi32(a, b)
#define vit__vi_mul(a, b) simde_mm256_mullo_epi32(a, b)
#define vit__vi_and(a, b) simde_mm256_and_si256(a, b)
#define vit__vi_srl16(a) simde_mm256_srli_epi32(a, 16)
#define vit__vi_sll16(a) simde_mm256_slli_epi32(a, 16)
#define vit__vi_sll(a, n) simde_mm256_slli_epi32(a, n)
#define vit__vi_load_u16(p) simde_mm256_cvtepu16_epi32(simde_mm_loadu_si128((const simde__m128i *)(const void *)(p)))
#define vit__vi_float(a) simde_mm256_cvtepi32_ps(a)
#define vit__vi_min(a, b) simde_mm256_min_epi32(a, b)
#define vit__vi_max(a, b) simde_mm256_max_epi32(a, b)
/* To nearest, ties to even, as nearbyintf: not SIMDe 0.7's portable
   round_ps(TO_NEAREST_INT), which rounds ties away from zero. */
#define vit__v_round(a) simde_mm256_cvtps_epi32(a)
#if VIT__DOT_I8 && defined(VIT__I8_MADDUBS)
/* acc + a . b, 4 s8 products per lane, exactly, on AVX2 without VNNI.
   vpmaddubsw multiplies u8 by s8 and sums pairs into s16 with saturation:
   u8 xq by s8 w (what vpdpbusd takes) can reach 2 * 255 * 127 and would
   saturate, so x is kept signed (xq - 128) and the product is taken as
   |x| . (w with x's signs): at most 2 * 128 * 127 = 32512, never saturated
   (w is -127..127: vpsignb cannot overflow). vpmaddwd by ones sums the
   pairs into int32. On Zen 3 that peaks at 1.2x the FMA peak's
   multiply-adds (vpsignb takes the multiply ports too; bench_kernels); the
   saturating u8 form ONNX Runtime runs on AVX2 is ~1.2x faster again, but
   not exact. */
static VIT__INLINE vit__vi vit__vi_dot4(vit__vi acc, vit__vi a, vit__vi b) {
    simde__m256i p = simde_mm256_maddubs_epi16(simde_mm256_abs_epi8(a), simde_mm256_sign_epi8(b, a));
    return simde_mm256_add_epi32(acc, simde_mm256_madd_epi16(p, simde_mm256_set1_epi16(1)));
}
/* The same where a is u8 0..127 (x rounded to 7 bits, vit__x_narrow): vpmaddubsw on a and b as they are,
   2 * 127 * 127 within int16, and one operation of four fewer (no vpsignb on the multiply ports): ViT-B/16 I8 at
   B = 1, one thread, Zen 3: 0.33 -> 0.24 s. */
static VIT__INLINE vit__vi vit__vi_dot4u(vit__vi acc, vit__vi a, vit__vi b) {
    simde__m256i p = simde_mm256_maddubs_epi16(a, b);
    return simde_mm256_add_epi32(acc, simde_mm256_madd_epi16(p, simde_mm256_set1_epi16(1)));
}
#elif VIT__DOT_I8 && VIT__I8_XOFF
/* acc + a . b, 4 s8 products per lane: two NEON sdot through SIMDe. */
static VIT__INLINE vit__vi vit__vi_dot4(vit__vi acc, vit__vi a, vit__vi b) {
    simde__m256i_private r = simde__m256i_to_private(acc), x = simde__m256i_to_private(a),
                         y = simde__m256i_to_private(b);
    int h;
    for (h = 0; h < 2; h++)
        r.m128i_private[h].neon_i32 =
            simde_vdotq_s32(r.m128i_private[h].neon_i32, x.m128i_private[h].neon_i8, y.m128i_private[h].neon_i8);
    return simde__m256i_from_private(r);
}
#endif
/* SIMDe 0.7 has no 256-bit vpmovdb or vpmovdw: narrow through memory. */
#if VIT__DOT_I8
static VIT__INLINE void vit__vi_store_u8(unsigned char *p, vit__vi v) {
    int32_t t[8];
    int j;
    vit__vi_store(t, v);
    for (j = 0; j < 8; j++) p[j] = (unsigned char)t[j];
}
#endif
#if VIT__DOT_BF16
static VIT__INLINE void vit__vi_store_u16(uint16_t *p, vit__vi v) {
    int32_t t[8];
    int j;
    vit__vi_store(t, v);
    for (j = 0; j < 8; j++) p[j] = (uint16_t)t[j];
}
static VIT__INLINE vit__vf vit__v_dpbf16(vit__vf acc, vit__vi a, vit__vi b) {
    simde__m256bh x, y;
    memcpy(&x, &a, sizeof x);
    memcpy(&y, &b, sizeof y);
    return simde_mm256_dpbf16_ps(acc, x, y);
}
#endif
#endif
#if VIT__DOT_I8 && !defined(VIT__I8_MADDUBS)
#define vit__vi_dot4u vit__vi_dot4 /* one form for x whatever its range */
#endif

#if VIT__DOT_I8
/* Four vectors of int32 to 4 VW bytes in order, each clamped to 0..hi (u8, 1: I8's x, hi its xmax) or to -128..127
   (0: q's and k's for the I8 attention, whose values lie within it), plus off (as a byte: I8's x adds -VIT__I8_XOFF
   but where vit__x_narrow). Two saturating packs clamp exactly (to int16, then to u8 or s8; a byte min then to
   127), where a vector at a time took a max, a min and a narrowing store; the packs interleave 128-bit lanes,
   which one permutation of dwords puts back. I8's x
   converted, 40 rows of 3072 in L2, 7.1 -> 5.4 us; ViT-B/16 I8, one thread, alternating pairs: B = 1 0.989x
   (ten), B = 8 0.990x (six). */
#if VIT__VW == 16 /* the dwords' order back (a constant in memory: GCC built SIMDe's setr lane by lane) */
static const int32_t vit__pack_order[16] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};
#else
static const int32_t vit__pack_order[8] = {0, 4, 1, 5, 2, 6, 3, 7};
#endif
static VIT__INLINE void vit__vi_store_8x4(unsigned char *p, vit__vi a, vit__vi b, vit__vi c, vit__vi d, const int u8,
                                          int hi, int off) {
#if VIT__VW == 16
    simde__m512i h0 = simde_mm512_packs_epi32(a, b), h1 = simde_mm512_packs_epi32(c, d);
    simde__m512i v = simde_mm512_permutexvar_epi32(
        vit__vi_load(vit__pack_order), u8 ? simde_mm512_packus_epi16(h0, h1) : simde_mm512_packs_epi16(h0, h1));
    if (u8 && hi < 255) v = simde_mm512_min_epu8(v, simde_mm512_set1_epi8((char)hi));
    if (off) v = simde_mm512_add_epi8(v, simde_mm512_set1_epi8((char)off));
#else
    simde__m256i h0 = simde_mm256_packs_epi32(a, b), h1 = simde_mm256_packs_epi32(c, d);
    simde__m256i v = simde_mm256_permutevar8x32_epi32(
        u8 ? simde_mm256_packus_epi16(h0, h1) : simde_mm256_packs_epi16(h0, h1), vit__vi_load(vit__pack_order));
    if (u8 && hi < 255) v = simde_mm256_min_epu8(v, simde_mm256_set1_epi8((char)hi));
    if (off) v = simde_mm256_add_epi8(v, simde_mm256_set1_epi8((char)off));
#endif
    vit__vi_store(p, v);
}
#endif

/* x's bits rounded to bf16 as vit__bf16_round does (the high halves). */
static VIT__INLINE vit__vi vit__v_bf16_bits(vit__vf x) {
    vit__vi u = vit__v_as_i(x);
    return vit__vi_add(u, vit__vi_add(vit__vi_set1(0x7fff), vit__vi_and(vit__vi_srl16(u), vit__vi_set1(1))));
}
/* x rounded to bf16 and widened back to floats: vit__bf16_float(vit__bf16_round(x)) on a vector (the widening
   tiles' x, rows or packed) */
static VIT__INLINE vit__vf vit__v_bf16_float(vit__vf x) {
    return vit__v_as_f(vit__vi_and(vit__v_bf16_bits(x), vit__vi_set1((int32_t)0xffff0000u)));
}

/* One element of a LayerNorm, (x - mean) rstd w + b: on a vector (a row's vectors of VIT__VW) and on one float
   (the row's tail past them), as vit__layernorm_row computes them and vit__xp_pack too: one definition each, so
   that both give vit_k_layernorm's bits */
static VIT__INLINE vit__vf vit__ln_v(vit__vf x, vit__vf mean, vit__vf rstd, vit__vf w, vit__vf b) {
    return vit__v_fma(vit__v_mul(vit__v_sub(x, mean), rstd), w, b);
}
static VIT__INLINE float vit__ln_s(float x, float mean, float rstd, float w, float b) {
    return (x - mean) * rstd * w + b;
}

#if VIT__XP
static float vit__row_rstd(const float *x, int C, float eps, float *mean);
/* Rows [0, rows) of x (K floats, ldx apart), through the LayerNorm ln unless NULL and rounded to bf16 if bf, into d
   in the order the tiles read them (vit__tile_xp, vit__tile_bfw_x): tile by tile, K MR floats a tile, the MR rows
   of one k together, rows past `rows` zero (a product's x into its scratch, vit__xp_fill; the f32 attention's q). A
   tile then broadcasts from one stream at offsets the compiler knows, where it read six rows ldx apart (six streams
   to keep in L1, six address registers). Twelve layers' F32 products in turn on a Zen 3, one thread, 30
   alternating pairs, the pack (and LayerNorm) included: qkv with LN1 0.98-0.99x (DINOv2-S/14 at 518 px, ViT-B/16),
   fc1 with LN2 and GELU 0.96-0.985x, each faster in 19-21 of 30; one product repeated, 60 pairs: 1370 x 384 x 1152
   0.98x (faster in 50), 197 x 768 x 2304 0.96x (55); F32 rows of 1536 and 3072 (fc2) 1.02-1.04x slower, so rows
   past VIT__XP_KMAX stay as they are (and proj's, vit__xp_pays). Eight k of the MR rows are an 8 x 8 transpose (two
   rows of zeros); each k's eight floats are stored MR apart, the next k overwriting the two past its six, so the
   last eight k of a tile go one at a time (nothing stored past the tile: the next may be another thread's). The
   LayerNorm is vit__layernorm_row's, element by element as it computes each (vit__ln_v on its vectors of VIT__VW,
   vit__ln_s on its tail), on the rows' means and scales first: the bits of vit_k_layernorm, with no rows written
   out for it (it had normalised a tile's rows into 24 KiB on the stack, and only rows to VIT__XP_KMAX). The same
   values: the same bits as rows ldx apart. */
static VIT__INLINE void vit__xp_pack_as(float *d, const float *x, int ldx, int K, int rows, const vit__ln *ln,
                                        const int bf) {
    float mean[VIT__MR], rstd[VIT__MR];
    simde__m256 vm[VIT__MR], vr[VIT__MR];
    int m, k, i, kv = K / VIT__VW * VIT__VW; /* vit__layernorm_row's vectors end at kv */
    for (m = 0; m < rows; m += VIT__MR, d += (size_t)VIT__MR * K) {
        int mr = rows - m < VIT__MR ? rows - m : VIT__MR;
        const float *xm = x + (size_t)m * ldx;
        simde__m256 r[8];
        for (i = 0; ln && i < mr; i++) {
            rstd[i] = vit__row_rstd(xm + (size_t)i * ldx, K, ln->eps, &mean[i]);
            vm[i] = vit__v_set1(mean[i]);
            vr[i] = vit__v_set1(rstd[i]);
        }
        for (k = 0; k + 8 < K; k += 8) {
            /* eight rows, a constant count, so that r stays in registers (loops to mr had kept it in memory) */
            simde__m256 w = ln ? vit__v_load(ln->w + k) : simde_mm256_setzero_ps(),
                        b = ln ? vit__v_load(ln->b + k) : simde_mm256_setzero_ps();
            for (i = 0; i < 8; i++) {
                simde__m256 v = i < mr ? simde_mm256_loadu_ps(xm + (size_t)i * ldx + k) : simde_mm256_setzero_ps();
                if (ln && i < mr) v = vit__ln_v(v, vm[i], vr[i], w, b);
                if (bf) v = vit__v_bf16_float(v);
                r[i] = v;
            }
            vit__transpose8_v(r);
            for (i = 0; i < 8; i++) simde_mm256_storeu_ps(d + (size_t)(k + i) * VIT__MR, r[i]);
        }
        for (; k < K; k++)
            for (i = 0; i < VIT__MR; i++) {
                float v = i < mr ? xm[(size_t)i * ldx + k] : 0.0f;
                if (ln && i < mr && k < kv) /* its vector steps, on one lane */
                    v = simde_mm256_cvtss_f32(vit__ln_v(vit__v_set1(v), vit__v_set1(mean[i]), vit__v_set1(rstd[i]),
                                                        vit__v_set1(ln->w[k]), vit__v_set1(ln->b[k])));
                else if (ln && i < mr)
                    v = vit__ln_s(v, mean[i], rstd[i], ln->w[k], ln->b[k]);
                d[(size_t)k * VIT__MR + i] = bf ? vit__bf16_float(vit__bf16_round(v)) : v;
            }
    }
}
/* with ln and bf constants inside (tested in the loop, they had made a pass without them 1.4x slower) */
static void vit__xp_pack(float *d, const float *x, int ldx, int K, int rows, const vit__ln *ln, int bf) {
    if (ln && bf) vit__xp_pack_as(d, x, ldx, K, rows, ln, 1);
    else if (ln) vit__xp_pack_as(d, x, ldx, K, rows, ln, 0);
    else if (bf) vit__xp_pack_as(d, x, ldx, K, rows, NULL, 1);
    else vit__xp_pack_as(d, x, ldx, K, rows, NULL, 0);
}
/* Rows [m0, m1) of a product's x (m0 a multiple of MR) into its scratch, where the tiles read them */
static void vit__xp_fill(const vit__mm *p, int m0, int m1) {
    VIT_ASSERT(m0 % VIT__MR == 0);
    vit__xp_pack((float *)p->xs + (size_t)m0 * p->K, p->x + (size_t)m0 * p->ldx, p->ldx, p->K, m1 - m0, p->ln,
                 p->wt == VIT_DTYPE_BF16);
}
static void vit__xp_fill_tiles(const void *ctx, int t0, int t1, int thread) {
    const vit__mm *p = (const vit__mm *)ctx;
    (void)thread;
    vit__xp_fill(p, t0 * VIT__MR, t1 * VIT__MR < p->M ? t1 * VIT__MR : p->M);
}
#endif

#if VIT__DOT_BF16
/* A vector's bf16 bits to h. Native vcvtneps2bf16 rounds as vit__bf16_round does, in one instruction for the
   integer steps' seven (rows of x as bf16 took 6.6% of a BF16 forward at 518 px), except that it reads float
   denormals as 0: as vdpbf16ps and the AMX tiles read bf16 ones. */
#if VIT__VW == 16 && defined(SIMDE_X86_AVX512BF16_NATIVE)
#define vit__v_store_bf16(h, x) _mm256_storeu_si256((__m256i *)(void *)(h), (__m256i)_mm512_cvtneps_pbh(x))
#else
#define vit__v_store_bf16(h, x) vit__vi_store_u16(h, vit__vi_srl16(vit__v_bf16_bits(x)))
#endif

/* h (K, then a zero if K is odd) = x rounded to bf16: pairs for vdpbf16ps. */
static void vit__bf16_row(uint16_t *h, const float *x, int K) {
    int k = 0;
    for (; k + VIT__VW <= K; k += VIT__VW) vit__v_store_bf16(h + k, vit__v_load(x + k));
    for (; k < K; k++) h[k] = vit__bf16_round(x[k]);
    if (K & 1) h[K] = 0;
}

#endif

/* Bytes of one row of x as the tiles read it: bf16 pairs or u8 quads for
   the dot-product kernels (zero padded), else floats. */
static size_t vit__xs_row(int wt, int K) {
    if (wt == VIT_DTYPE_BF16 && VIT__DOT_BF16) return (size_t)(K + 1) / 2 * 4;
    if (wt == VIT_DTYPE_I8 && VIT__DOT_I8) return (size_t)(K + 3) / 4 * 4;
    return (size_t)K * sizeof(float);
}

/* Groups of 4 bytes from one row of a product's converted x to the next: xs_ld where its caller converted x. */
static size_t vit__xs_ld(const vit__mm *p) { return p->xs_ld ? (size_t)p->xs_ld : vit__xs_row(p->wt, p->K) / 4; }

/* Rows of the scratch xs: where the AMX tiles are built, M rounded up to
   16, the rows past M zero, so the tiles load whole 16-row tiles of x
   straight from it (a padded copy per k step of the last rows cost a fifth
   of the tiles' time); elsewhere M, and no zeros to write per product. */
static size_t vit__xs_rows(int M) { return VIT__AMX_BUILD ? ((size_t)M + 15) / 16 * 16 : (size_t)M; }

/* I8: the rows' scales (then their zero points) after the rows of xs. */
static float *vit__xs_scales(const vit__mm *p) {
    return (float *)(void *)((unsigned char *)p->xs + vit__xs_rows(p->M) * vit__xs_row(p->wt, p->K));
}

/* k per panel block: the panel is 32 KiB whatever its element. */
static int vit__kc(int wt) {
    if (wt == VIT_DTYPE_BF16 && VIT__DOT_BF16) return 2 * VIT__KC;
    if (wt == VIT_DTYPE_I8 && VIT__DOT_I8) return 4 * VIT__KC;
    return VIT__KC;
}

/* Row m of x into the scratch: bf16 (pairs, or floats rounded), or for I8
   the row's scale and zero point, then u8 quads (or xq - zp as floats).
   The scratch holds M rows, then (I8) M scales and M zero points. */
static void vit__layernorm_row(float *y, const float *x, const float *w, const float *b, int C, float eps);
/* AVX2 without VNNI, x rounded to 0..127 (xmax 127): x is held as xq itself and the tile takes vpmaddubsw on it
   and w as they are (vit__vi_dot4u), where 0..255 needs x - 128 and the |x|, sign form. */
static int vit__x_narrow(const vit__mm *p) {
#ifdef VIT__I8_MADDUBS
    return p->wt == VIT_DTYPE_I8 && p->xmax <= 127;
#else
    (void)p;
    return 0;
#endif
}
/* Rows x[0], ..., x[R - 1] (C floats each; R 1 or 2, a constant once inlined): each row's mean and 1 / sqrt(biased
   variance + eps), the variance from the centred values (two passes, as LayerNorm's reference), each sum in two
   sets of accumulators (one chain waited on its last add, then fma: ViT-B/16's qkv input at B = 8 as I8 converts
   it, LayerNorm fused, 0.270-0.280 -> 0.238-0.260 ms). Two rows go side by side, each in its own order: the same
   bits as one at a time (vit__row_rstd, vit__xs_fill_n). */
/* a hot loop's step S for row 0 and (R > 1) row 1, their indices constants, so that the rows' vectors stay in
   registers (loops over r, which -O2 did not unroll, kept them in memory: 1.6x slower; vit__rows_rstd and
   vit__xs_fill_n) */
#define VIT__EACH(S) { S(0) if (R > 1) { S(1) } }
static VIT__INLINE void vit__rows_rstd(const float *const *x, const int R, int C, float eps, float *mean,
                                       float *rstd) {
    vit__vf a0[2], a1[2], vm[2];
    int k, j, r;
    for (r = 0; r < R; r++) a0[r] = a1[r] = vit__v_zero();
#define VIT__SUM2(r)                                                  \
    a0[r] = vit__v_add(a0[r], vit__v_load(x[r] + k));                 \
    a1[r] = vit__v_add(a1[r], vit__v_load(x[r] + k + VIT__VW));
#define VIT__SUM1(r) a0[r] = vit__v_add(a0[r], vit__v_load(x[r] + k));
#define VIT__SQ2(r)                                                                       \
    {                                                                                     \
        vit__vf e0 = vit__v_sub(vit__v_load(x[r] + k), vm[r]),                            \
                e1 = vit__v_sub(vit__v_load(x[r] + k + VIT__VW), vm[r]);                  \
        a0[r] = vit__v_fma(e0, e0, a0[r]);                                                \
        a1[r] = vit__v_fma(e1, e1, a1[r]);                                                \
    }
#define VIT__SQ1(r)                                                                       \
    {                                                                                     \
        vit__vf e0 = vit__v_sub(vit__v_load(x[r] + k), vm[r]);                            \
        a0[r] = vit__v_fma(e0, e0, a0[r]);                                                \
    }
    for (k = 0; k + 2 * VIT__VW <= C; k += 2 * VIT__VW) VIT__EACH(VIT__SUM2)
    for (; k + VIT__VW <= C; k += VIT__VW) VIT__EACH(VIT__SUM1)
    for (r = 0; r < R; r++) {
        mean[r] = vit__v_hsum(vit__v_add(a0[r], a1[r]));
        for (j = k; j < C; j++) mean[r] += x[r][j];
        mean[r] /= (float)C;
        vm[r] = vit__v_set1(mean[r]);
        a0[r] = a1[r] = vit__v_zero();
    }
    for (k = 0; k + 2 * VIT__VW <= C; k += 2 * VIT__VW) VIT__EACH(VIT__SQ2)
    for (; k + VIT__VW <= C; k += VIT__VW) VIT__EACH(VIT__SQ1)
    for (r = 0; r < R; r++) {
        float var = vit__v_hsum(vit__v_add(a0[r], a1[r]));
        for (j = k; j < C; j++) var += (x[r][j] - mean[r]) * (x[r][j] - mean[r]);
        var /= (float)C;
        rstd[r] = 1.0f / sqrtf(var + eps);
    }
#undef VIT__SUM2
#undef VIT__SUM1
#undef VIT__SQ2
#undef VIT__SQ1
}

/* Rows [m, m + R) of x converted for the I8 tiles, or through their LayerNorm for the BF16 ones (R 1 or 2, a
   constant once inlined). Each row: its LayerNorm if any (vit__rows_rstd, vit__layernorm_row's values), then
   BF16 its values rounded to bf16 pairs as they are made (what vit__bf16_row gives on vit__layernorm_row's); I8 its
   range as its values are made (no pass of its own over them), its scale and zero point, then its bytes. Two rows
   go side by side, each in its own order: a row's steps are chains of dependent operations (its sums, its range,
   the reductions), some 600 cycles a row of 768 with x in L2 where its loads and arithmetic need a third of that,
   and the other row's chains fill the wait. The same bits as one row at a time (a row's sums in the same order; a
   range is the same min and max whatever the order). A LayerNorm product's x, 1,576 rows of 768 (ViT-B/16 at
   B = 8), one thread, Zen 5, three alternating runs: I8 0.222-0.232 -> 0.189-0.206 ms, BF16 0.194-0.208 -> 0.144
   ms (ViT-B/16 BF16 at B = 8 1.014x, 19 of 20 alternating rounds); rows without a LayerNorm ran no faster in pairs
   (0.102 -> 0.119 ms), so they go one at a time. */
static VIT__INLINE void vit__xs_fill_n(const vit__mm *p, int m, const int R) {
    float lnrow[2][VIT__LN_ROW_MAX], *sxs, lo[2], hi[2], sx[2], inv[2], mean[2], rstd[2];
    const float *xm[2];
    unsigned char *d[2];
    int32_t *zps, zp[2];
    int K = p->K, kv = K / VIT__VW * VIT__VW, k, j, r, xmax = p->xmax, xoff = vit__x_narrow(p) ? 0 : VIT__I8_XOFF,
        finite[2];
    vit__vf vlo[2], vhi[2], ulo[2], uhi[2];
    vit__vi bad[2], ubad[2], mag = vit__vi_set1(0x7fffffff);
    (void)xoff; /* unread where the f32 tiles take x less zp */
    for (r = 0; r < R; r++) {
        xm[r] = p->x + (size_t)(m + r) * p->ldx;
        d[r] = (unsigned char *)p->xs + (size_t)(m + r) * vit__xs_row(p->wt, K);
        vlo[r] = vhi[r] = ulo[r] = uhi[r] = vit__v_zero();
        bad[r] = ubad[r] = vit__vi_zero();
    }
    /* a lane's bits less the sign: above +Inf's when it is not finite (the integer order of non-negative floats) */
#define VIT__RANGE(v, l, h, b) \
    (l = vit__v_min(l, v), h = vit__v_max(h, v), b = vit__vi_max(b, vit__vi_and(vit__v_as_i(v), mag)))
    if (p->ln) {
        const float *w = p->ln->w, *b = p->ln->b;
        vit__vf vm[2], vr[2];
        VIT_ASSERT(K <= VIT__LN_ROW_MAX);
        vit__rows_rstd(xm, R, K, p->ln->eps, mean, rstd);
        for (r = 0; r < R; r++) {
            vm[r] = vit__v_set1(mean[r]);
            vr[r] = vit__v_set1(rstd[r]);
            for (j = kv; j < K; j++) lnrow[r][j] = vit__ln_s(xm[r][j], mean[r], rstd[r], w[j], b[j]);
        }
#if VIT__DOT_BF16
        if (p->wt == VIT_DTYPE_BF16) { /* the values to bf16 pairs, the tail's from lnrow's */
#define VIT__LNB(r) \
    vit__v_store_bf16((uint16_t *)(void *)d[r] + k, vit__ln_v(vit__v_load(xm[r] + k), vm[r], vr[r], wk, bk));
            for (k = 0; k < kv; k += VIT__VW) {
                vit__vf wk = vit__v_load(w + k), bk = vit__v_load(b + k);
                VIT__EACH(VIT__LNB)
            }
#undef VIT__LNB
            for (r = 0; r < R; r++) {
                uint16_t *h = (uint16_t *)(void *)d[r];
                for (j = kv; j < K; j++) h[j] = vit__bf16_round(lnrow[r][j]);
                if (K & 1) h[K] = 0;
            }
            return;
        }
#endif
        for (k = 0; k < kv; k += VIT__VW) {
            vit__vf wk = vit__v_load(w + k), bk = vit__v_load(b + k);
#define VIT__LNR(r)                                                                       \
    {                                                                                     \
        vit__vf v = vit__ln_v(vit__v_load(xm[r] + k), vm[r], vr[r], wk, bk);              \
        vit__v_store(lnrow[r] + k, v);                                                    \
        VIT__RANGE(v, vlo[r], vhi[r], bad[r]);                                            \
    }
            VIT__EACH(VIT__LNR)
        }
        for (r = 0; r < R; r++) xm[r] = lnrow[r];
    } else {
#define VIT__R2(r)                                                                        \
    {                                                                                     \
        vit__vf v = vit__v_load(xm[r] + k), u = vit__v_load(xm[r] + k + VIT__VW);         \
        VIT__RANGE(v, vlo[r], vhi[r], bad[r]);                                            \
        VIT__RANGE(u, ulo[r], uhi[r], ubad[r]);                                           \
    }
#define VIT__R1(r)                                                                        \
    {                                                                                     \
        vit__vf v = vit__v_load(xm[r] + k);                                               \
        VIT__RANGE(v, vlo[r], vhi[r], bad[r]);                                            \
    }
        for (k = 0; k + 2 * VIT__VW <= K; k += 2 * VIT__VW) VIT__EACH(VIT__R2)
        for (; k + VIT__VW <= K; k += VIT__VW) VIT__EACH(VIT__R1)
    }
#undef VIT__RANGE
#undef VIT__EACH
#undef VIT__LNR
#undef VIT__R2
#undef VIT__R1

    /* each row's range, which sets its scale and zero point, and whether it is finite */
    sxs = vit__xs_scales(p);
    zps = (int32_t *)(void *)(sxs + p->M);
    for (r = 0; r < R; r++) {
        lo[r] = -vit__v_hmax(vit__v_sub(vit__v_zero(), vit__v_min(vlo[r], ulo[r])));
        hi[r] = vit__v_hmax(vit__v_max(vhi[r], uhi[r]));
        finite[r] = vit__v_hmax(vit__v_as_f(vit__vi_min(vit__vi_max(bad[r], ubad[r]), vit__vi_set1(0x7f800000)))) <
                    INFINITY;
        for (j = kv; j < K; j++) {
            float x = xm[r][j];
            lo[r] = x < lo[r] ? x : lo[r];
            hi[r] = x > hi[r] ? x : hi[r];
            finite[r] &= fabsf(x) < INFINITY;
        }
        vit__q8_scale(lo[r], hi[r], finite[r], xmax, &sx[r], &inv[r], &zp[r]);
        sxs[m + r] = sx[r];
        zps[m + r] = zp[r];
    }

    /* the rows quantised to u8: shifted for the dot product, else as floats less the zero point; a row that is
       not finite zeros (xq = zp = 0), its outputs NaN through sx */
    for (r = 0; r < R; r++) {
        vit__vf vinv = vit__v_set1(inv[r]);
        vit__vi vzp = vit__vi_set1(zp[r]);
        const float *xr = xm[r];
        unsigned char *dr = d[r];
        if (!finite[r]) {
            for (k = 0; k < K; k++) {
#if VIT__DOT_I8
                dr[k] = (unsigned char)(0 - xoff);
#else
                ((float *)(void *)dr)[k] = 0.0f;
#endif
            }
#if VIT__DOT_I8
            for (; k % 4; k++) dr[k] = 0;
#endif
            continue;
        }
        k = 0;
#define VIT__Q8V(j) vit__vi_add(vit__v_round(vit__v_mul(vit__v_load(xr + k + (j) * VIT__VW), vinv)), vzp)
#if VIT__DOT_I8
        for (; k + 4 * VIT__VW <= K; k += 4 * VIT__VW) /* four vectors a step, narrowed together */
            vit__vi_store_8x4(dr + k, VIT__Q8V(0), VIT__Q8V(1), VIT__Q8V(2), VIT__Q8V(3), 1, xmax, -xoff);
#endif
        for (; k + VIT__VW <= K; k += VIT__VW) {
            vit__vi q = VIT__Q8V(0);
            q = vit__vi_min(vit__vi_max(q, vit__vi_zero()), vit__vi_set1(xmax));
#if VIT__DOT_I8
            vit__vi_store_u8(dr + k, vit__vi_sub(q, vit__vi_set1(xoff)));
#else
            vit__v_store((float *)(void *)dr + k, vit__vi_float(vit__vi_sub(q, vzp)));
#endif
        }
#undef VIT__Q8V
        for (; k < K; k++) {
#if VIT__DOT_I8
            dr[k] = (unsigned char)((int)(vit__q8(xr[k], inv[r], zp[r], xmax) + (float)zp[r]) - xoff);
#else
            ((float *)(void *)dr)[k] = vit__q8(xr[k], inv[r], zp[r], xmax);
#endif
        }
#if VIT__DOT_I8
        for (; k % 4; k++) dr[k] = 0;
#endif
    }
}

/* Row m of x into the scratch: BF16, the row (through its LayerNorm if any) rounded to bfloat16, in pairs for the
   dot product, else widened back to floats (with VIT__DOT_BF16 and a LayerNorm, vit__xs_fill_n's); I8,
   vit__xs_fill_n's. */
static void vit__xs_fill(const vit__mm *p, int m) {
    float lnrow[VIT__LN_ROW_MAX];
    const float *xm = p->x + (size_t)m * p->ldx;
    unsigned char *d = (unsigned char *)p->xs + (size_t)m * vit__xs_row(p->wt, p->K);
    int K = p->K, k = 0;
    if (p->wt != VIT_DTYPE_BF16 || (VIT__DOT_BF16 && p->ln)) {
        vit__xs_fill_n(p, m, 1);
        return;
    }
    if (p->ln) {
        VIT_ASSERT(K <= VIT__LN_ROW_MAX);
        vit__layernorm_row(lnrow, xm, p->ln->w, p->ln->b, K, p->ln->eps);
        xm = lnrow;
    }
#if VIT__DOT_BF16
    vit__bf16_row((uint16_t *)(void *)d, xm, K);
    (void)k;
#else
    {
        float *f = (float *)(void *)d;
        for (; k + VIT__VW <= K; k += VIT__VW) vit__v_store(f + k, vit__v_bf16_float(vit__v_load(xm + k)));
        for (; k < K; k++) f[k] = vit__bf16_float(vit__bf16_round(xm[k]));
    }
#endif
}

static void vit__xs_fill_rows(const void *ctx, int m0, int m1, int thread) {
    const vit__mm *p = (const vit__mm *)ctx;
    int m = m0;
    (void)thread;
    if (p->ln && (p->wt != VIT_DTYPE_BF16 || VIT__DOT_BF16)) /* rows in pairs */
        for (; m + 1 < m1; m += 2) vit__xs_fill_n(p, m, 2);
    for (; m < m1; m++) vit__xs_fill(p, m);
}

/* The f32 panel of a BF16 or I8 weight, widened (I8: q, the scales come
   at the end), for the f32 tiles. Whole 8 x 8 blocks are widened in
   registers and go through the register transpose: one value at a time,
   widening made BF16 ~10% slower than F32 on AVX2. */
static void vit__pack_panel_wide(float *dst, const vit__mm *p, int n0, int nv, int k0, int kc) {
    int jg, j, k, i, k8 = kc / 8 * 8, bf = p->wt == VIT_DTYPE_BF16;
    for (jg = 0; jg < VIT__NR; jg += 8) {
        int whole = jg + 8 <= nv;
        if (whole)
            for (k = 0; k < k8; k += 8) {
                simde__m256 r[8];
                for (i = 0; i < 8; i++) {
                    size_t at = (size_t)(n0 + jg + i) * p->ldw + k0 + k;
                    const void *src = bf ? (const void *)((const uint16_t *)p->wq + at)
                                         : (const void *)((const int8_t *)p->wq + at);
                    r[i] = bf ? simde_mm256_castsi256_ps(simde_mm256_slli_epi32(
                                    simde_mm256_cvtepu16_epi32(simde_mm_loadu_si128((const simde__m128i *)src)), 16))
                              : simde_mm256_cvtepi32_ps(
                                    simde_mm256_cvtepi8_epi32(simde_mm_loadl_epi64((const simde__m128i *)src)));
                }
                vit__transpose8_v(r);
                for (i = 0; i < 8; i++) simde_mm256_storeu_ps(dst + (size_t)(k + i) * VIT__NR + jg, r[i]);
            }
        for (j = jg; j < jg + 8; j++) {
            if (j >= nv) {
                for (k = 0; k < kc; k++) dst[(size_t)k * VIT__NR + j] = 0.0f;
            } else if (bf) {
                const uint16_t *src = (const uint16_t *)p->wq + (size_t)(n0 + j) * p->ldw + k0;
                for (k = whole ? k8 : 0; k < kc; k++) dst[(size_t)k * VIT__NR + j] = vit__bf16_float(src[k]);
            } else {
                const int8_t *src = (const int8_t *)p->wq + (size_t)(n0 + j) * p->ldw + k0;
                for (k = whole ? k8 : 0; k < kc; k++) dst[(size_t)k * VIT__NR + j] = (float)src[k];
            }
        }
    }
}

/* y = alpha * (S * (sx ws)) + b over a tile whose S the f32 tiles summed
   (the I8 product without the dot-product kernel). */
static void vit__q8_finish(const vit__mm *p, int m0, int n0, int rows, int nv) {
    const float *sxs = vit__xs_scales(p);
    int i, j;
    for (i = 0; i < rows; i++) {
        float *yi = p->y + (size_t)(m0 + i) * p->ldy + n0;
        for (j = 0; j < nv; j++)
            yi[j] = p->alpha * (yi[j] * (sxs[m0 + i] * p->ws[n0 + j])) + (p->b ? p->b[n0 + j] : 0.0f);
    }
}

#if VIT__DOT_BF16 || VIT__DOT_I8
static vit__vf vit__v_act(vit__vf x, int act);
static VIT__INLINE vit__vf vit__v_act_c(vit__vf x, const int act);
static VIT__INLINE vit__vf vit__epi_v(vit__vf v, const int act, const float *g, const float *r);
#endif

#if VIT__DOT_BF16 || VIT__DOT_I8 || VIT__BF16_WIDE
/* A panel of 4-byte groups along k (BF16 pairs, I8 quads): dst[g NR + j]
   = the 4 bytes at src + j ld + 4 g, zeros past `bytes` in a row and past
   row nv. Whole 8 x 8 blocks go through the register transpose; one group
   at a time, packing took 15% of a BF16 ViT-B/16 forward with vdpbf16ps. A
   partial panel's blocks too, zero rows past nv (attention's last panel of
   keys, 5 of 32 at 197 tokens, had gone a group at a time: perf, ViT-B/16's
   BF16 attention at B = 8, packing 5.5% -> 3.0% of it). */
static void vit__pack_panel_u32(uint32_t *dst, const unsigned char *src, size_t ld, int nv, int bytes) {
    int j, g, i, ng = (bytes + 3) / 4, g8 = bytes / 32 * 8;
    for (j = 0; j < VIT__NR; j++)
        for (g = g8; g < ng; g++) { /* what the blocks below leave */
            uint32_t u = 0;
            if (j < nv) memcpy(&u, src + (size_t)j * ld + 4 * g, bytes - 4 * g < 4 ? (size_t)(bytes - 4 * g) : 4);
            dst[(size_t)g * VIT__NR + j] = u;
        }
    for (j = 0; j < VIT__NR; j += 8)
        for (g = 0; g < g8; g += 8) {
            simde__m256 r[8];
            for (i = 0; i < 8; i++)
                r[i] = j + i < nv ? simde_mm256_loadu_ps((const float *)(const void *)(src + (size_t)(j + i) * ld +
                                                                                  4 * (size_t)g))
                                  : simde_mm256_setzero_ps();
            if (j < nv) vit__transpose8_v(r);
            for (i = 0; i < 8; i++) simde_mm256_storeu_ps((float *)(void *)(dst + (size_t)(g + i) * VIT__NR + j), r[i]);
        }
}
#endif

#if VIT__BF16_WIDE
/* The F32 tile on a BF16 weight packed at load (pairs of k per uint32: vit__pack_panel_u32): each vector of
   columns is read once for each k of its pair (holding it across both would take two registers more than AVX2's
   16), widened by a shift for its low half (k even) and a mask for its high half (k odd), then the FMAs of
   vit__tile in its order. kc counts k, not pairs. x: rows t->ldx apart, or packed (xp) as vit__tile_x reads it. */
static VIT__INLINE void vit__tile_bfw_x(const int mr, const int nvec, const int xp, const vit__tl *t) {
    const int xk = xp ? VIT__MR : 1;
    float *y = t->y, alpha = t->alpha;
    const float *x = t->xf, *b = t->b;
    const uint32_t *at = t->bp; /* the pair of k and k + 1 */
    int k, ldy = t->ldy, ldx = xp ? 1 : t->ldx, kc = t->kc, first = t->first, last = t->last, nv = t->nv;
    int fy = VIT__SUMS_FROM_Y || t->fy, add = !first && !fy;
    vit__vi hi = vit__vi_set1((int32_t)0xffff0000u);
    VIT__OUT_EPI
    VIT__ROWS(VIT__DECL)
    VIT__ROWS(VIT__FROM_Y)
#define VIT__BFW(f)                                                                  \
    {                                                                                \
        vit__vf b0 = vit__v_as_f(f(vit__vi_load(at))), b1 = b0;                      \
        if (nvec > 1) b1 = vit__v_as_f(f(vit__vi_load(at + VIT__VW)));               \
        VIT__ROWS(VIT__FMA_ROW)                                                      \
    }
#define VIT__BFW_HI(v) vit__vi_and(v, hi)
    for (k = 0; k + 1 < kc; k++, at += VIT__NR) {
        VIT__BFW(vit__vi_sll16)
        k++;
        VIT__BFW(VIT__BFW_HI)
    }
    if (k < kc) VIT__BFW(vit__vi_sll16)
#undef VIT__BFW_HI
#undef VIT__BFW
    VIT__ROWS(VIT__OUT)
}
/* x packed where the F32 tiles can read it so (VIT__XP: vit__xp_use packs every BF16 product's), else as rows */
static VIT__INLINE void vit__tile_bfw(const int mr, const int nvec, const vit__tl *t) {
    vit__tile_bfw_x(mr, nvec, VIT__XP, t);
}
VIT__MRS(VIT__TL_DEF, vit__tile_bfw)
static const vit__tl_fn vit__tiles_bfw[2][VIT__MR + 1] = {{NULL, VIT__MRS(VIT__TL_NARROW, vit__tile_bfw)},
                                                          {NULL, VIT__MRS(VIT__TL_WIDE, vit__tile_bfw)}};
#endif

#if VIT__DOT_BF16
/* kc pairs: per pair and row, one broadcast of the row's pair and one
   vdpbf16ps per vector of columns. The finish is vit__tile's. */
static VIT__INLINE void vit__tile_bf16(const int mr, const int nvec, const vit__tl *t) {
    float *y = t->y;
    const float *b = t->b;
    const uint32_t *x = t->x, *bp = t->bp;
    int g, ldy = t->ldy, ldx = t->ldx, first = t->first, last = t->last, nv = t->nv;
    int fy = VIT__SUMS_FROM_Y, add = !first && !fy;
    float alpha = t->alpha;
    VIT__OUT_EPI
    VIT__ROWS(VIT__DECL)
    VIT__ROWS(VIT__FROM_Y)
    for (g = 0; g < t->kc; g++) {
        vit__vi b0 = vit__vi_load(bp + (size_t)g * VIT__NR),
                b1 = nvec > 1 ? vit__vi_load(bp + (size_t)g * VIT__NR + VIT__VW) : b0;
#define VIT__STEP(i)                                                   \
        if (mr > i) {                                                  \
            vit__vi a = vit__vi_set1((int32_t)x[(size_t)i * ldx + g]); \
            c##i##a = vit__v_dpbf16(c##i##a, a, b0);                   \
            if (nvec > 1) c##i##b = vit__v_dpbf16(c##i##b, a, b1);     \
        }
        VIT__ROWS(VIT__STEP)
#undef VIT__STEP
    }
    VIT__ROWS(VIT__OUT)
}
VIT__MRS(VIT__TL_DEF, vit__tile_bf16)
static const vit__tl_fn vit__tiles_bf16[2][VIT__MR + 1] = {{NULL, VIT__MRS(VIT__TL_NARROW, vit__tile_bf16)},
                                                           {NULL, VIT__MRS(VIT__TL_WIDE, vit__tile_bf16)}};

/* The panel of pairs: dst[g NR + j] = w[n0 + j][k0 + 2g], w[..][k0 + 2g + 1]
   (low half first, zeros past kc and nv). */
static void vit__pack_panel_bf16(uint32_t *dst, const vit__mm *p, int n0, int nv, int k0, int kc) {
    vit__pack_panel_u32(dst, (const unsigned char *)((const uint16_t *)p->wq + (size_t)n0 * p->ldw + k0),
                        (size_t)p->ldw * 2, nv, kc * 2);
}
#endif

#if VIT__DOT_I8
/* A tile row's S over a whole panel's block, c0 and c1: its sums acc less zp (less x's offset) times each column's
   sum (w0, w1), plus the earlier blocks' S kept in y as int32 bits (so, NULL on the first block). */
static VIT__INLINE void vit__i8_row_sums(vit__vi *c0, vit__vi *c1, const int32_t *acc, int32_t zp, vit__vi w0,
                                         vit__vi w1, const int32_t *so_far) {
    vit__vi z = vit__vi_set1(zp);
    *c0 = vit__vi_sub(vit__vi_load(acc), vit__vi_mul(z, w0));
    *c1 = vit__vi_sub(vit__vi_load(acc + VIT__VW), vit__vi_mul(z, w1));
    if (so_far) {
        *c0 = vit__vi_add(vit__vi_load(so_far), *c0);
        *c1 = vit__vi_add(vit__vi_load(so_far + VIT__VW), *c1);
    }
}

/* The last block of a whole panel, rows [0, mr): S (the sums less zp times their column's sum, plus the earlier
   blocks' unless first) to alpha (S (sx ws)) + b, then the epilogue (vit__epi_tile's steps, in its order). A
   row's two vectors at a time, the panel's vectors loaded once: with the column vectors outside the rows, and
   vit__v_act called a vector (every live vector to memory and back around it), this took 8.4 cycles a vector
   without an epilogue, 4.6 now (a loop of finishes alone, Zen 4). act: a constant after inlining. */
static VIT__INLINE void vit__tile_i8_last(const vit__tl *t, int mr, int32_t (*acc)[VIT__NR], const int act) {
    /* t's fields in locals: read through t after each store to y (which could have changed them), GCC loaded
       them again a row and vector (perf, DINOv2-S/14 I8 at 518 px, one thread: 6.6% -> 5.9% of the forward) */
    float *y = t->y;
    const float *sx = t->sx, *gs = t->g, *r = t->r;
    const int32_t *zp = t->zp;
    int i, ldy = t->ldy, first = t->first, stream = t->stream, ldr = t->e ? t->e->ldr : 0;
    int32_t xoff = t->narrow ? 0 : VIT__I8_XOFF;
    vit__vi w0 = vit__vi_load(t->wsum), w1 = vit__vi_load(t->wsum + VIT__VW);
    /* alpha folded into the column scales, and the bias added in the fma: two operations of the nine a vector
       took (the reference's alpha (S (sx ws)) + b rounds apart by an ulp or two) */
    vit__vf s0 = vit__v_mul(vit__v_set1(t->alpha), vit__v_load(t->ws)),
            s1 = vit__v_mul(vit__v_set1(t->alpha), vit__v_load(t->ws + VIT__VW));
    vit__vf b0 = t->b ? vit__v_load(t->b) : vit__v_zero(), b1 = t->b ? vit__v_load(t->b + VIT__VW) : vit__v_zero();
    vit__vf g0 = gs ? vit__v_load(gs) : vit__v_zero(), g1 = gs ? vit__v_load(gs + VIT__VW) : vit__v_zero();
    for (i = 0; i < mr; i++) {
        float *yi = y + (size_t)i * ldy;
        vit__vi c0, c1;
        vit__vf q = vit__v_set1(sx[i]), f0, f1;
        vit__i8_row_sums(&c0, &c1, acc[i], zp[i] - xoff, w0, w1, first ? NULL : (const int32_t *)(const void *)yi);
        f0 = vit__v_act_c(vit__v_fma(vit__vi_float(c0), vit__v_mul(q, s0), b0), act);
        f1 = vit__v_act_c(vit__v_fma(vit__vi_float(c1), vit__v_mul(q, s1), b1), act);
        if (gs) {
            f0 = vit__v_mul(f0, g0);
            f1 = vit__v_mul(f1, g1);
        }
        if (r) {
            f0 = vit__v_add(f0, vit__v_load(r + (size_t)i * ldr));
            f1 = vit__v_add(f1, vit__v_load(r + (size_t)i * ldr + VIT__VW));
        }
        if (stream) {
            vit__v_stream(yi, f0);
            vit__v_stream(yi + VIT__VW, f1);
        } else {
            vit__v_store(yi, f0);
            vit__v_store(yi + VIT__VW, f1);
        }
    }
}

/* The end of an I8 block for rows [0, mr) of the tile, whose sums acc
   holds: each lane loses zp * (its column's sum over the block), adds the
   earlier blocks' S (kept in y as int32 bits), and the last block turns S
   into alpha * (S * (sx ws)) + b. */
static void vit__tile_i8_finish(const vit__tl *t, int mr, int32_t (*acc)[VIT__NR]) {
    float *y = t->y, alpha = t->alpha;
    const float *sx = t->sx, *ws = t->ws, *b = t->b;
    const int32_t *zp = t->zp, *wsum = t->wsum;
    int i, j, ldy = t->ldy, first = t->first, last = t->last, nv = t->nv;
    int32_t xoff = t->narrow ? 0 : VIT__I8_XOFF;
    if (nv == VIT__NR && last) {
        switch (t->e ? t->e->act : VIT__EPI_NONE) {
        case VIT__EPI_NONE: vit__tile_i8_last(t, mr, acc, VIT__EPI_NONE); return;
        case VIT_ACT_GELU: vit__tile_i8_last(t, mr, acc, VIT_ACT_GELU); return;
        default: vit__tile_i8_last(t, mr, acc, t->e->act); return;
        }
    }
    if (nv == VIT__NR) { /* an earlier block: S so far, as int32 bits in y */
        vit__vi w0 = vit__vi_load(wsum), w1 = vit__vi_load(wsum + VIT__VW);
        for (i = 0; i < mr; i++) {
            int32_t *yi = (int32_t *)(void *)(y + (size_t)i * ldy);
            vit__vi c0, c1;
            vit__i8_row_sums(&c0, &c1, acc[i], zp[i] - xoff, w0, w1, first ? NULL : yi);
            vit__vi_store(yi, c0);
            vit__vi_store(yi + VIT__VW, c1);
        }
        return;
    }
    for (i = 0; i < mr; i++) {
        float *yi = y + (size_t)i * ldy;
        int32_t z = zp[i] - xoff, *u = acc[i];
        for (j = 0; j < nv; j++) {
            int32_t s = u[j] - z * wsum[j], sofar; /* |z wsum| <= 255 * 127 * 4 VIT__KC */
            memcpy(&sofar, yi + j, 4);
            if (!first) s += sofar;
            if (last)
                yi[j] = alpha * ((float)s * (sx[i] * ws[j])) + (b ? b[j] : 0.0f);
            else
                memcpy(yi + j, &s, 4);
        }
    }
}

/* kc quads: per quad and row, one broadcast of the row's four u8 and one
   vpdpbusd per vector of columns, into int32 lanes. The sums then leave
   the registers for vit__tile_i8_finish: with that work inlined here, 24
   accumulators and the epilogue's values live at once, GCC 12 spilled
   accumulators inside the k loop (AVX-512: half the speed). */
static VIT__INLINE void vit__tile_i8_rows(const int mr, const int nvec, const vit__tl *t, const int narrow) {
    const uint32_t *x = t->x, *bp = t->bp;
    int g, ldx = t->ldx;
    int32_t acc[12][VIT__NR]; /* VIT__ROWS names 12 rows whatever VIT__MR is (clang checks the dead ones too) */
#define VIT__DECL_I(i) vit__vi c##i##a = vit__vi_zero(), c##i##b = vit__vi_zero();
    VIT__ROWS(VIT__DECL_I)
#undef VIT__DECL_I

    /* S = the sum of u8 x s8 products, four per dot step */
    for (g = 0; g < t->kc; g++) {
        vit__vi b0 = vit__vi_load(bp + (size_t)g * VIT__NR),
                b1 = nvec > 1 ? vit__vi_load(bp + (size_t)g * VIT__NR + VIT__VW) : b0;
#define VIT__STEP(i)                                                   \
        if (mr > i) {                                                  \
            vit__vi a = vit__vi_set1((int32_t)x[(size_t)i * ldx + g]); \
            if (narrow) {                                              \
                c##i##a = vit__vi_dot4u(c##i##a, a, b0);               \
                if (nvec > 1) c##i##b = vit__vi_dot4u(c##i##b, a, b1); \
            } else {                                                   \
                c##i##a = vit__vi_dot4(c##i##a, a, b0);                \
                if (nvec > 1) c##i##b = vit__vi_dot4(c##i##b, a, b1);  \
            }                                                          \
        }
        VIT__ROWS(VIT__STEP)
#undef VIT__STEP
    }
#define VIT__SAVE_I(i) \
    if (mr > i) { \
        vit__vi_store(acc[i], c##i##a); \
        if (nvec > 1) vit__vi_store(acc[i] + VIT__VW, c##i##b); \
    }
    VIT__ROWS(VIT__SAVE_I)
#undef VIT__SAVE_I
    vit__tile_i8_finish(t, mr, acc);
}
static VIT__INLINE void vit__tile_i8(const int mr, const int nvec, const vit__tl *t) {
#ifdef VIT__I8_MADDUBS
    /* The AVX2 dot step needs four registers of its own (|x|, two signed
       w, the ones), so 16 registers hold four rows' sums, not six: more
       rows run as a second pass over the panel, which is still in L1. x on
       7 bits needs three (x, a product, the ones; w read from memory by
       each vpmaddubsw): all six rows in one pass, no register spilled
       (ViT-B/16, B = 1, one thread, Zen 3, alternating pairs: 0.93x). */
    if (t->narrow) {
        vit__tile_i8_rows(mr, nvec, t, 1);
        return;
    }
    if (mr > 4) {
        vit__tl u = *t;
        vit__tile_i8_rows(4, nvec, t, 0);
        u.y += (size_t)4 * t->ldy;
        u.x += (size_t)4 * t->ldx;
        u.sx += 4;
        u.zp += 4;
        if (u.r) u.r += (size_t)4 * t->e->ldr;
        vit__tile_i8_rows(mr - 4, nvec, &u, 0);
        return;
    }
#endif
    vit__tile_i8_rows(mr, nvec, t, 0);
}

VIT__MRS(VIT__TL_DEF, vit__tile_i8)
static const vit__tl_fn vit__tiles_i8[2][VIT__MR + 1] = {{NULL, VIT__MRS(VIT__TL_NARROW, vit__tile_i8)},
                                                         {NULL, VIT__MRS(VIT__TL_WIDE, vit__tile_i8)}};

/* Each column's sum over the ng quads of a packed I8 panel, eight columns
   a vector (vpmaddubsw by ones, then vpmaddwd: exact, a quad sums to
   -512..508). One byte at a time, the packing and the sums took 15% of an
   I8 ViT-B/16 forward on AVX2. */
static void vit__panel_wsum(int32_t *wsum, const uint32_t *bp, int ng) {
    int j, g;
    simde__m256i ones8 = simde_mm256_set1_epi8(1), ones16 = simde_mm256_set1_epi16(1), acc[VIT__NR / 8];
    for (j = 0; j < VIT__NR / 8; j++) acc[j] = simde_mm256_setzero_si256();
    for (g = 0; g < ng; g++) /* the panel in the order it lies: a panel packed at load streams from memory */
        for (j = 0; j < VIT__NR / 8; j++) {
            simde__m256i v = simde_mm256_loadu_si256((const void *)(bp + (size_t)g * VIT__NR + 8 * j));
            acc[j] = simde_mm256_add_epi32(acc[j], simde_mm256_madd_epi16(simde_mm256_maddubs_epi16(ones8, v), ones16));
        }
    for (j = 0; j < VIT__NR / 8; j++) simde_mm256_storeu_si256((void *)(wsum + 8 * j), acc[j]);
}

/* The panel of quads, dst[g NR + j] = w[n0 + j][k0 + 4g .. 4g + 3] (zeros
   past kc and nv), and its column sums. */
static void vit__pack_panel_i8(uint32_t *dst, int32_t *wsum, const vit__mm *p, int n0, int nv, int k0, int kc) {
    vit__pack_panel_u32(dst, (const unsigned char *)((const int8_t *)p->wq + (size_t)n0 * p->ldw + k0), (size_t)p->ldw,
                        nv, kc);
    vit__panel_wsum(wsum, dst, (kc + 3) / 4);
}
#endif

/* The wide tiles (vit__gemm_block2): VIT__MR / 2 rows against two whole panels packed at load (t's from n0,
   u's from n0 + NR), four vectors of columns, the 24 sums in registers that the MR x NR tiles keep. Per pair
   (BF16) or quad (I8) of k they load four vectors of w and broadcast six of x, where the MR x NR tiles load two
   and broadcast twelve (F32: floats and FMAs, the same counts), and on Zen 4 the broadcasts were what held the
   products back: the bare k loop in L1 ran at 93% of the FMA peak, 88-95% of the vdpbf16ps one and 94% of the
   vpdpbusd one, the wide loop at 98%, 99% and 98%. In ViT-B/16 (one thread, B = 1) the F32 products went from
   88-92% of the FMA peak to 91-97% (the forward 0.344 -> 0.324-0.329 s; at B = 8 2.84-2.93 -> 2.62 s), the I8
   ones 390 -> 410 GOP/s (qkv) and 359 -> 377 (fc1 with GELU), the BF16 ones about 3%. Each sum takes the same
   steps in the same order as in the MR x NR tiles and the finish is theirs: the same bits (test_quant: packed
   against row-major weights). */
#if VIT__WIDE
#define VIT__ROWS2(X) X(0) X(1) X(2) X(3) X(4) X(5)
/* as VIT__FROM_Y, for the F32 and BF16 wide tiles */
#define VIT__FROM_Y2(i)                                              \
    if (mr > i && !first && !VIT__SUMS_FROM_Y) {                     \
        VIT__PREFETCH(yt + (size_t)i * ldy);                         \
        VIT__PREFETCH(yt + (size_t)i * ldy + VIT__NR - 1);           \
        VIT__PREFETCH(yu + (size_t)i * ldy);                         \
        VIT__PREFETCH(yu + (size_t)i * ldy + VIT__NR - 1);           \
    } else if (mr > i && !first) {                                   \
        c##i##a = vit__v_load(yt + (size_t)i * ldy);                 \
        c##i##b = vit__v_load(yt + (size_t)i * ldy + VIT__VW);       \
        c##i##c = vit__v_load(yu + (size_t)i * ldy);                 \
        c##i##d = vit__v_load(yu + (size_t)i * ldy + VIT__VW);       \
    }
/* The tile's lines of y asked for, for writing, as its first block starts: the k loop hides the fetch its first
   stores into cold lines would wait on (ViT-B/16 f32 at B = 8, fc1's 19 MB a block: 0.981x on one thread, 0.975x
   on two, four alternating pairs each; B = 1 and 518 px within noise) */
#define VIT__PREFETCH_YW(i)                                          \
    if (mr > i && t->first && !t->stream) {                          \
        VIT__PREFETCHW(t->y + (size_t)i * t->ldy);                   \
        VIT__PREFETCHW(t->y + (size_t)i * t->ldy + VIT__VW);         \
        VIT__PREFETCHW(u->y + (size_t)i * t->ldy);                   \
        VIT__PREFETCHW(u->y + (size_t)i * t->ldy + VIT__VW);         \
    }
#define VIT__OUT2(i)                                                                          \
    if (mr > i) {                                                                         \
        vit__tile_out_row(yt + (size_t)i * ldy, bt, add, last, alpha, c##i##a, c##i##b, gt,   \
                          rt ? rt + (size_t)i * ldr : NULL);                                \
        vit__tile_out_row(yu + (size_t)i * ldy, bu, add, last, alpha, c##i##c, c##i##d, gu,   \
                          ru ? ru + (size_t)i * ldr : NULL);                                \
    }
/* The wide F32 and BF16 tiles' fields for VIT__OUT2 (t and u share all but y and b). */
#define VIT__OUT2_FIELDS                                                      \
    float *yt = t->y, *yu = u->y, alpha = t->alpha;                           \
    const float *bt = t->b, *bu = u->b, *gt = t->g, *gu = u->g, *rt = t->r, *ru = u->r; \
    int ldy = t->ldy, first = t->first, last = t->last, add = !first && !VIT__SUMS_FROM_Y; \
    int ldr = t->e ? t->e->ldr : 0;

#define VIT__DECL2F(i) vit__vf c##i##a = vit__v_zero(), c##i##b = c##i##a, c##i##c = c##i##a, c##i##d = c##i##a;

/* The wide tiles' share of the next panels' lines (vit__pf_share): t's and u's npf lines from their pf0, one each
   every `every` steps of k (F32: 8 k; BF16 pairs and I8 quads: 4). */
#define VIT__PF2(k, every)                                                                     \
    if ((k) % (every) == 0) {                                                                  \
        if ((k) / (every) < t->npf) VIT__PREFETCH(t->pf0 + (size_t)((k) / (every)) * 64);      \
        if ((k) / (every) < u->npf) VIT__PREFETCH(u->pf0 + (size_t)((k) / (every)) * 64);      \
    }

/* F32: the panels' floats (bf), x's (xf); each panel's npf lines of the next block from its pf0, one every 8 k
   (vit__gemm_block2). */
static VIT__INLINE void vit__tile2_f32(const int mr, const vit__tl *t, const vit__tl *u) {
    const float *x = t->xf, *bp = t->bf, *bq = u->bf;
    int k, ldx = t->ldx;
    VIT__OUT2_FIELDS
    VIT__ROWS2(VIT__DECL2F)
    VIT__ROWS2(VIT__FROM_Y2)
    VIT__ROWS2(VIT__PREFETCH_YW)
    for (k = 0; k < t->kc; k++) {
        vit__vf b0 = vit__v_load(bp + (size_t)k * VIT__NR), b1 = vit__v_load(bp + (size_t)k * VIT__NR + VIT__VW),
                b2 = vit__v_load(bq + (size_t)k * VIT__NR), b3 = vit__v_load(bq + (size_t)k * VIT__NR + VIT__VW);
        VIT__PF2(k, 8)
#define VIT__STEP(i)                                                   \
        if (mr > i) {                                                  \
            vit__vf a = vit__v_set1(x[(size_t)i * ldx + k]);           \
            c##i##a = vit__v_fma(a, b0, c##i##a);                      \
            c##i##b = vit__v_fma(a, b1, c##i##b);                      \
            c##i##c = vit__v_fma(a, b2, c##i##c);                      \
            c##i##d = vit__v_fma(a, b3, c##i##d);                      \
        }
        VIT__ROWS2(VIT__STEP)
#undef VIT__STEP
    }
    VIT__ROWS2(VIT__OUT2)
}

/* The dot-product wide tiles' k loop over groups of 4 bytes (BF16 pairs, I8 quads): DOT2, their instruction, and
   the sums c##i##a..d declared by the tile (also BF16 attention's q kᵀ tile, vit__att_tile2_bf16); PF, what else
   a step does (the dense tiles: VIT__PF2; the attention's: nothing). */
#define VIT__STEP2(i)                                                  \
        if (mr > i) {                                                  \
            vit__vi a = vit__vi_set1((int32_t)x[(size_t)i * ldx + g]); \
            c##i##a = VIT__DOT2(c##i##a, a, b0);                       \
            c##i##b = VIT__DOT2(c##i##b, a, b1);                       \
            c##i##c = VIT__DOT2(c##i##c, a, b2);                       \
            c##i##d = VIT__DOT2(c##i##d, a, b3);                       \
        }
#define VIT__LOOP2(PF)                                                                                             \
    for (g = 0; g < t->kc; g++) {                                                                                  \
        vit__vi b0 = vit__vi_load(bp + (size_t)g * VIT__NR), b1 = vit__vi_load(bp + (size_t)g * VIT__NR + VIT__VW), \
                b2 = vit__vi_load(bq + (size_t)g * VIT__NR), b3 = vit__vi_load(bq + (size_t)g * VIT__NR + VIT__VW); \
        PF                                                                                                         \
        VIT__ROWS2(VIT__STEP2)                                                                                     \
    }

#if VIT__DOT_BF16
static VIT__INLINE void vit__tile2_bf16(const int mr, const vit__tl *t, const vit__tl *u) {
    const uint32_t *x = t->x, *bp = t->bp, *bq = u->bp;
    int g, ldx = t->ldx;
    VIT__OUT2_FIELDS
    VIT__ROWS2(VIT__DECL2F)
    VIT__ROWS2(VIT__FROM_Y2)
    VIT__ROWS2(VIT__PREFETCH_YW)
#define VIT__DOT2 vit__v_dpbf16
    VIT__LOOP2(VIT__PF2(g, 4))
#undef VIT__DOT2
    VIT__ROWS2(VIT__OUT2)
}
#endif
#if VIT__DOT_I8
static VIT__INLINE void vit__tile2_i8(const int mr, const vit__tl *t, const vit__tl *u) {
    const uint32_t *x = t->x, *bp = t->bp, *bq = u->bp;
    int g, ldx = t->ldx;
    int32_t acc[6][VIT__NR], acd[6][VIT__NR];
#define VIT__DECL2(i) vit__vi c##i##a = vit__vi_zero(), c##i##b = c##i##a, c##i##c = c##i##a, c##i##d = c##i##a;
    VIT__ROWS2(VIT__DECL2)
#undef VIT__DECL2
    VIT__ROWS2(VIT__PREFETCH_YW)
#define VIT__DOT2 vit__vi_dot4
    VIT__LOOP2(VIT__PF2(g, 4))
#undef VIT__DOT2
#define VIT__SAVE2(i)                                  \
    if (mr > i) {                                      \
        vit__vi_store(acc[i], c##i##a);                \
        vit__vi_store(acc[i] + VIT__VW, c##i##b);      \
        vit__vi_store(acd[i], c##i##c);                \
        vit__vi_store(acd[i] + VIT__VW, c##i##d);      \
    }
    VIT__ROWS2(VIT__SAVE2)
#undef VIT__SAVE2
    vit__tile_i8_finish(t, mr, acc);
    vit__tile_i8_finish(u, mr, acd);
}
#endif
#undef VIT__FROM_Y2
#undef VIT__PREFETCH_YW
#undef VIT__PF2
#undef VIT__OUT2
#undef VIT__OUT2_FIELDS
typedef void (*vit__tl2_fn)(const vit__tl *, const vit__tl *);
#define VIT__TL2_DEF(f, mr) static void f##_##mr(const vit__tl *t, const vit__tl *u) { f(mr, t, u); }
#define VIT__TL2_ENTRY(f, mr) f##_##mr,
#define VIT__MRS2(X, f) X(f, 1) X(f, 2) X(f, 3) X(f, 4) X(f, 5) X(f, 6)
VIT__MRS2(VIT__TL2_DEF, vit__tile2_f32)
static const vit__tl2_fn vit__tiles2_f32[7] = {NULL, VIT__MRS2(VIT__TL2_ENTRY, vit__tile2_f32)};
#if VIT__DOT_BF16
VIT__MRS2(VIT__TL2_DEF, vit__tile2_bf16)
static const vit__tl2_fn vit__tiles2_bf16[7] = {NULL, VIT__MRS2(VIT__TL2_ENTRY, vit__tile2_bf16)};
#endif
#if VIT__DOT_I8
VIT__MRS2(VIT__TL2_DEF, vit__tile2_i8)
static const vit__tl2_fn vit__tiles2_i8[7] = {NULL, VIT__MRS2(VIT__TL2_ENTRY, vit__tile2_i8)};
#endif
#endif

#undef VIT__DECL
#undef VIT__FROM_Y
#undef VIT__OUT
#undef VIT__OUT_EPI

static void vit__pack_panel(float *dst, const float *w, int ldw, int n0, int nv, int k0, int kc) {
    int k, j, kb;
    /* 64 k at a time: the NR source rows are read in 256-byte runs and the
       8 KiB of panel they fill stays in L1 while it is written. Whole 8 x 8
       blocks go through registers; the edges one float at a time. */
    for (kb = 0; kb < kc; kb += 64) {
        int ke = kc - kb < 64 ? kc : kb + 64, k8 = kb + (ke - kb) / 8 * 8;
        for (j = 0; j + 8 <= nv; j += 8) {
            const float *src = w + ((size_t)n0 + (size_t)j) * (size_t)ldw + k0;
            for (k = kb; k < k8; k += 8) vit__transpose8(dst + (size_t)k * VIT__NR + j, src + k, ldw);
            for (; k < ke; k++) {
                int r;
                for (r = 0; r < 8; r++) dst[(size_t)k * VIT__NR + j + r] = src[(size_t)r * ldw + k];
            }
        }
        for (; j < nv; j++) { /* (offsets in size_t: GCC -O3 saw an int overflow in n0 + j on a path never taken) */
            const float *src = w + ((size_t)n0 + (size_t)j) * (size_t)ldw + k0;
            for (k = kb; k < ke; k++) dst[(size_t)k * VIT__NR + j] = src[k];
        }
        for (; j < VIT__NR; j++)
            for (k = kb; k < ke; k++) dst[(size_t)k * VIT__NR + j] = 0.0f;
    }
}

/* The same panel of a w laid out (K, N) (vit__mm.nn): its rows are the
   panel's rows already, so packing is a copy of nv floats per k. */
static void vit__pack_panel_nn(float *dst, const float *w, int ldw, int n0, int nv, int k0, int kc) {
    int k;
    for (k = 0; k < kc; k++) {
        memcpy(dst + (size_t)k * VIT__NR, w + (size_t)(k0 + k) * ldw + n0, (size_t)nv * sizeof(float));
        if (nv < VIT__NR) memset(dst + (size_t)k * VIT__NR + nv, 0, (size_t)(VIT__NR - nv) * sizeof(float));
    }
}

/* 1 when the panel of columns from n0 lies packed in w (vit__pack_weight):
   every whole panel of a packed weight; the last partial one only with tail. */
static int vit__mm_packed(const vit__mm *p, int n0) { return p->panel && (n0 + VIT__NR <= p->N || p->tail); }

/* 1 when w is a loaded F32 weight packed in place (wq is w), not panels
   packed apart from it (attention's K and V): its rows lie in the panels. */
static int vit__mm_f32_inplace(const vit__mm *p) {
    return p->wt == VIT_DTYPE_F32 && p->panel && p->wq == (const void *)p->w;
}

/* The nn panel (vit__pack_panel_nn's) of a loaded weight W packed in panels
   of NR rows (vit__mm.nnp): this product's k runs down W's rows, so each
   stretch of k inside one of W's panels is a transpose of that panel's
   columns [n0, n0 + nv) (they lie NR apart); W's last partial panel stays
   row-major. The same panel as from W row-major: the same bits. */
static void vit__pack_panel_nnp(float *dst, const vit__mm *p, int n0, int nv, int k0, int kc) {
    int r = k0, full = p->K / VIT__NR * VIT__NR;
    while (r < k0 + kc && r < full) {
        int pr = r / VIT__NR * VIT__NR, c = (pr + VIT__NR < k0 + kc ? pr + VIT__NR : k0 + kc) - r;
        vit__pack_panel(dst + (size_t)(r - k0) * VIT__NR, p->w + (size_t)pr * p->ldw + (size_t)n0 * VIT__NR, VIT__NR, 0,
                        nv, r - pr, c);
        r += c;
    }
    if (r < k0 + kc) vit__pack_panel_nn(dst + (size_t)(r - k0) * VIT__NR, p->w, p->ldw, n0, nv, r, k0 + kc - r);
}

/* Where row r of w lies from k0, for the products that read w by rows (few
   rows, dot products), and *st the floats between its values: 1, or NR in
   a loaded F32 weight's packed panels (vit__mm_f32_inplace; the last
   partial panel stays row-major). */
static const float *vit__w_row(const vit__mm *p, int r, int k0, int *st) {
    if (vit__mm_f32_inplace(p) && r < p->N / VIT__NR * VIT__NR) {
        *st = VIT__NR;
        return p->w + (size_t)r / VIT__NR * VIT__NR * p->K + (size_t)k0 * VIT__NR + r % VIT__NR;
    }
    *st = 1;
    return p->w + (size_t)r * p->ldw + k0;
}

#if VIT__DOT_BF16 || VIT__DOT_I8 || VIT__BF16_WIDE
/* Where a packed weight's panel n0 lies from k0 on (groups of 4 bytes, NR a row: a whole panel is one run over
   all of K), and, I8 only, the column sums of its k block from k0 (blocks of kcb, vit__kc): the packed BF16
   weight has none (wsums NULL, and an offset from NULL is undefined). */
static const uint32_t *vit__packed_panel(const vit__mm *p, int n0, int k0) {
    size_t es = p->wt == VIT_DTYPE_BF16 ? 2 : 1;
    return (const uint32_t *)(const void *)((const unsigned char *)p->wq +
                                            ((size_t)n0 * p->K + (size_t)k0 * VIT__NR) * es);
}
#endif
#if VIT__DOT_BF16 || VIT__DOT_I8
static const int32_t *vit__packed_wsum(const vit__mm *p, int n0, int k0, int kcb) {
    return p->wsums + ((size_t)n0 / VIT__NR * (size_t)((p->K + kcb - 1) / kcb) + (size_t)(k0 / kcb)) * VIT__NR;
}
/* The column sums of the packed panel from n0 over k block [k0, k0 + kc) (vit__kc_at's, from a multiple of
   vit__kc's): the packed blocks' in it added into sum (exact in int32), or the one block's where it lies. */
static const int32_t *vit__packed_wsum_at(const vit__mm *p, int n0, int k0, int kc, int32_t *sum) {
    int kcb = vit__kc(VIT_DTYPE_I8), j, k;
    const int32_t *s = vit__packed_wsum(p, n0, k0, kcb);
    if (kc <= kcb) return s;
    for (j = 0; j < VIT__NR; j++) sum[j] = s[j];
    for (k = k0 + kcb; k < k0 + kc; k += kcb)
        for (s = vit__packed_wsum(p, n0, k, kcb), j = 0; j < VIT__NR; j++) sum[j] += s[j];
    return sum;
}
#endif

#if VIT__DOT_BF16 || VIT__DOT_I8
/* 1 when an I8 product's finished y goes to memory past the caches: y far larger than them (B = 8: 19 MB after
   fc1: its first stores into cold lines took 9-10% of the forward, and the epilogue's pass over y came after;
   ViT-B/16 int8 at B = 8: 0.95x on one thread, 0.98x on two, Zen 4, when the epilogue was a pass of its own) and
   its rows whole lines from n0. Past 64 MiB now, twice this Zen 5's L3: with the epilogue in the finish, y kept in
   the caches for the product or attention that reads it next did better (ViT-B/16 I8 at B = 8, ten alternating
   pairs: fc1's 19 MB and the qkv product's 14.5 MB streamed 1, the qkv product's alone 0.98, neither 0.96 on one
   thread; 1, 0.98, 0.96 on two). */
#ifndef VIT__Y_STREAM_BYTES
#define VIT__Y_STREAM_BYTES 67108864.0
#endif
static int vit__y_stream(const vit__mm *p, int n0) {
    return (double)p->M * p->N * sizeof(float) > VIT__Y_STREAM_BYTES && (uintptr_t)(p->y + n0) % 64 == 0 &&
           (size_t)p->ldy * sizeof(float) % 64 == 0;
}

/* A tile's rows from i0 in columns from n0: y, and for I8's finish the rows' scales and zero points (xs) and
   the epilogue's residual. */
static void vit__tl_rows(vit__tl *t, const vit__mm *p, int i0, int n0) {
    const float *sxs = vit__xs_scales(p);
    t->y = p->y ? p->y + (size_t)i0 * p->ldy + n0 : NULL; /* NULL: outputs to yb (vit__gemm_block2) */
    t->sx = sxs + i0;
    t->zp = (const int32_t *)(const void *)(sxs + p->M) + i0;
    t->r = vit__epi_r(t->e, i0, n0);
}
#endif

/* A tile's share, lines [done, stop), of the next block of a panel packed at load, one run of lines from next
   (NULL: none): the tile asks for up to one every `every` of its kc steps itself (t->pf0, t->npf; the F32 tiles
   every 8 k, the wide BF16 and I8 tiles every 4 groups, VIT__PF2), the rest are asked for here, now. Returns
   stop. The BF16 and I8 wide tiles too: a product at B = 1 reads its panels from memory, and each pair's first
   tile of 33 waited on them (ViT-B/16 on one thread, alternating pairs, I8 0.959x, BF16 0.973x; B = 8 0.982x,
   0.977x); asked for all at once before each tile, BF16's 47 lines a tile made it 1.02-1.03x slower. */
static int vit__pf_share(vit__tl *t, const unsigned char *next, int done, int stop, int kc, int every) {
    int i, cap = (kc + every - 1) / every;
    t->pf0 = next ? next + (size_t)done * 64 : NULL;
    t->npf = next ? (stop - done < cap ? stop - done : cap) : 0;
    for (i = done + t->npf; next && i < stop; i++) VIT__PREFETCH(next + (size_t)i * 64);
    return stop;
}

/* Every cache line of n floats from x asked for. */
static VIT__INLINE void vit__prefetch_row(const float *x, int n) {
    int k;
    for (k = 0; k < n; k += 16) VIT__PREFETCH(x + k);
    VIT__PREFETCH(x + n - 1);
}

/* k block [k0, k0 + kc) of columns [n0, n0 + nv) (nv <= NR), rows [m0,
   m1); kcb is the type's block size (vit__kc). */
static void vit__gemm_block(const vit__mm *p, int k0, int kc, int kcb, int n0, int nv, int m0, int m1) {
    /* 64-byte aligned, so no vector load of the panel splits a cache line. */
    float buf[VIT__KC * VIT__NR + 16], *bp = (float *)(((uintptr_t)buf + 63) & ~(uintptr_t)63);
    VIT_ASSERT(!p->yb); /* the wide tiles' only (vit__mm_yb) */
    const float *panel = bp; /* the tiles' panel: bp, or where w lies packed */
    float *y = p->y;
    const float *x = p->wt == VIT_DTYPE_F32 ? p->x : (const float *)p->xs;
    const unsigned char *wb = p->wt == VIT_DTYPE_F32 ? (const unsigned char *)p->w : (const unsigned char *)p->wq;
    int K = p->K, N = p->N, ldy = p->ldy, ldx = p->wt == VIT_DTYPE_F32 ? p->ldx : K, ldw = p->ldw;
    int es = vit__dtype_bytes(p->wt), last = k0 + kc == K;
    int dot = (p->wt == VIT_DTYPE_BF16 && VIT__DOT_BF16) || (p->wt == VIT_DTYPE_I8 && VIT__DOT_I8);
    const vit__epi *e = p->e;
    int m, fused = 0, lines = 0, per, done = 0, nk0 = k0 + kc < K ? k0 + kc : 0, nn0 = k0 + kc < K ? n0 : n0 + VIT__NR;
    int row_lines = ((K - nk0 < kcb ? K - nk0 : kcb) * es + 63) / 64, row = 0, line = 0;
    const unsigned char *pf[VIT__KC / 8], *next = NULL; /* the tile's lines to ask for; the next block packed */
    const vit__tl_fn(*f32_tiles)[VIT__MR + 1] = vit__tiles; /* the FMA tiles: on floats, or widening BF16 pairs */
    vit__tl t;
#if VIT__DOT_BF16 || VIT__DOT_I8
    int32_t wsum[VIT__NR];
    size_t xrow = vit__xs_ld(p);
#endif
    memset(&t, 0, sizeof t);
    t.ldy = ldy; t.first = k0 == 0; t.last = last; t.nv = nv; t.alpha = p->alpha;
    t.b = p->b ? p->b + n0 : NULL;
    t.pf = pf;
    t.narrow = vit__x_narrow(p);
    t.fy = VIT__LONG_FROM_Y(p->wt); /* (vit__kc_at) */
#if VIT__DOT_BF16 || VIT__DOT_I8
    t.bp = (const uint32_t *)(const void *)bp;
    t.kc = p->wt == VIT_DTYPE_BF16 ? (kc + 1) / 2 : (kc + 3) / 4;
    t.ldx = (int)xrow;
    t.ws = p->ws ? p->ws + n0 : NULL; t.wsum = wsum;
    /* A whole I8 panel's last block does the epilogue in its finish, and
       streams y to memory when it is far larger than the caches (vit__y_stream). */
    if (p->wt == VIT_DTYPE_I8 && dot && last && nv == VIT__NR) {
        t.e = e;
        t.g = e && e->g ? e->g + n0 : NULL;
        fused = e != NULL;
        t.stream = vit__y_stream(p, n0);
    }
#endif
    /* F32 and BF16: an epilogue without an activation done as the tile stores (VIT__OUT_EPI), not as a pass of
       vit__epi_tile's over the tile's outputs after it */
    if (e && last && nv == VIT__NR && e->act == VIT__EPI_NONE && (p->wt == VIT_DTYPE_F32 || p->wt == VIT_DTYPE_BF16)) {
        t.e = e;
        t.g = e->g ? e->g + n0 : NULL;
        fused = 1;
    }

    /* this block's panel of weights, packed in the order the tiles read it:
       read in place where the loader packed w (vit__pack_weight) */
    if (p->wt == VIT_DTYPE_F32 && vit__mm_packed(p, n0))
        panel = (const float *)p->wq + (size_t)n0 * K + (size_t)k0 * VIT__NR;
    else if (p->wt == VIT_DTYPE_F32 && p->nnp) vit__pack_panel_nnp(bp, p, n0, nv, k0, kc);
    else if (p->wt == VIT_DTYPE_F32 && p->nn) vit__pack_panel_nn(bp, p->w, ldw, n0, nv, k0, kc);
    else if (p->wt == VIT_DTYPE_F32) vit__pack_panel(bp, p->w, ldw, n0, nv, k0, kc);
#if VIT__DOT_BF16 || VIT__DOT_I8 || VIT__BF16_WIDE
    else if (vit__mm_packed(p, n0)) {
        t.bp = vit__packed_panel(p, n0, k0);
#if VIT__BF16_WIDE
        if (p->wt == VIT_DTYPE_BF16) f32_tiles = vit__tiles_bfw;
#endif
#if VIT__DOT_I8
        if (p->wt == VIT_DTYPE_I8) t.wsum = vit__packed_wsum_at(p, n0, k0, kc, wsum);
#endif
    }
#endif
#if VIT__DOT_BF16
    else if (p->wt == VIT_DTYPE_BF16) vit__pack_panel_bf16((uint32_t *)(void *)bp, p, n0, nv, k0, kc);
#endif
#if VIT__DOT_I8
    else if (p->wt == VIT_DTYPE_I8) vit__pack_panel_i8((uint32_t *)(void *)bp, wsum, p, n0, nv, k0, kc);
#endif
    else vit__pack_panel_wide(bp, p, n0, nv, k0, kc);
#if VIT__XP
    if (p->xp && f32_tiles == vit__tiles) f32_tiles = vit__tiles_xp; /* x packed (vit__xp_fill) */
    VIT_ASSERT(p->xp || f32_tiles != vit__tiles_bfw);                /* which reads it packed only */
#endif

    /* While this block is multiplied, pull the next one (the next k block,
       else the next panel's first) towards the cache a few lines during
       each tile: at batch 1 the weights stream from memory once per
       forward, and NR rows read at once are more streams than the hardware
       prefetcher follows. A BF16 or I8 block packed at load is one run of
       lines that the hardware prefetcher follows (asking as well measured
       3% slower); an F32 one (vit__mm_f32_inplace) is asked for too,
       spread over the tiles: without, the F32 tiles waited for it (the
       197 x 768 x 3072 product from memory 0.284 against 0.257 s). */
    if (nn0 < N && vit__mm_f32_inplace(p) && vit__mm_packed(p, nn0)) {
        next = (const unsigned char *)p->wq + ((size_t)nn0 * K + (size_t)nk0 * VIT__NR) * sizeof(float);
        lines = (K - nk0 < kcb ? K - nk0 : kcb) * VIT__NR * (int)sizeof(float) / 64;
    } else if (nn0 < N && !vit__mm_packed(p, nn0) && !p->nn)
        lines = (N - nn0 < VIT__NR ? N - nn0 : VIT__NR) * row_lines;
    per = (lines + (m1 - m0 + VIT__MR - 1) / VIT__MR - 1) / ((m1 - m0 + VIT__MR - 1) / VIT__MR);
    for (m = m0; m < m1; m += VIT__MR) {
        int mr = m1 - m < VIT__MR ? m1 - m : VIT__MR, stop = done + per < lines ? done + per : lines;
        t.npf = 0;
        t.pf0 = NULL;
        if (next) /* an F32 block packed at load, one run of lines: the tile counts them itself (listing them
                     here, a line at a time, was 4% of a ViT-B/16 f32 forward) */
            done = vit__pf_share(&t, next, done, stop, kc, 8);
        for (; done < stop; done++) { /* line `line` of row `row`, counted without a division */
            const unsigned char *at = wb + ((size_t)(nn0 + row) * ldw + nk0) * es + (size_t)line * 64;
            if (++line == row_lines) { line = 0; row++; }
            /* The F32 tile asks for its share of lines spread over its k
               loop, one every 8 k: asked all at once, they filled the
               core's line fill buffers and the tile waited for them (1.5%
               of a ViT-B/16 forward). */
            if (!dot && t.npf < (kc + 7) / 8 && t.npf < VIT__KC / 8) pf[t.npf++] = at;
            else VIT__PREFETCH(at);
        }

        /* The residual rows of this tile are read once, far apart: ask for
           them before the tile runs. */
        if (e && e->r && last) {
            int i;
            for (i = 0; i < mr; i++) vit__prefetch_row(e->r + (size_t)(m + i) * e->ldr + n0, nv);
        }
        /* A later block's tile starts from the sums y holds (VIT__SUMS_FROM_Y) and waits for them: the next
           tile's rows asked for now, while this one runs */
        if (k0 && (VIT__SUMS_FROM_Y || t.fy)) {
            int i;
            for (i = m + VIT__MR; i < m1 && i < m + 2 * VIT__MR; i++) vit__prefetch_row(y + (size_t)i * ldy + n0, nv);
        }

        /* the tile: FMA on floats, else the BF16 or I8 dot products */
        if (!dot) {
            int q8 = p->wt == VIT_DTYPE_I8; /* S first, scaled below */
            t.y = y + (size_t)m * ldy + n0;
            t.xf = x + (size_t)m * ldx + k0;
            t.ldx = ldx; t.bf = panel; t.kc = kc;
            t.r = vit__epi_r(t.e, m, n0);
            if (q8) { t.alpha = 1.0f; t.b = NULL; }
#if VIT__XP
            if (p->xp) t.xf = (const float *)p->xs + (size_t)m * K + (size_t)k0 * VIT__MR;
#endif
            f32_tiles[nv > VIT__VW][mr](&t);
            if (q8 && last) vit__q8_finish(p, m, n0, mr, nv);
        }
#if VIT__DOT_BF16 || VIT__DOT_I8
        else {
            vit__tl_rows(&t, p, m, n0);
            t.x = (const uint32_t *)(const void *)p->xs + (size_t)m * xrow + k0 / (p->wt == VIT_DTYPE_BF16 ? 2 : 4);
#if VIT__DOT_BF16
            if (p->wt == VIT_DTYPE_BF16) vit__tiles_bf16[nv > VIT__VW][mr](&t);
#endif
#if VIT__DOT_I8
            if (p->wt == VIT_DTYPE_I8) vit__tiles_i8[nv > VIT__VW][mr](&t);
#endif
        }
#endif
        if (e && last && !fused) vit__epi_tile(y, ldy, e, m, n0, mr, nv);
    }
}

#if VIT__WIDE
/* 1 when the panels from n0 and n0 + NR are whole and packed (at load, or attention's K and V), F32 or on the
   dot-product tiles: the wide tiles' (vit__gemm_block2). */
static int vit__mm_wide(const vit__mm *p, int n0) {
    return (p->wt == VIT_DTYPE_F32 || (p->wt == VIT_DTYPE_BF16 && VIT__DOT_BF16) ||
            (p->wt == VIT_DTYPE_I8 && VIT__DOT_I8)) &&
           p->panel && n0 + 2 * VIT__NR <= p->N;
}

#if VIT__DOT_BF16
/* Rows [m, m + mr) of two panels' outputs from n0 (t, 2 NR floats a row, as the wide tile left them: alpha S + b)
   through the epilogue (vit__epi_tile's operations in its order) and rounded to bf16 into p->yb: what the next
   product's conversion of them (vit__bf16_row) would give, without the f32 outputs going to memory and back. act
   is a constant once inlined (vit__v_act_c: GELU's code in the loop, not a call a vector). */
static VIT__INLINE void vit__epi_bf16_c(const vit__mm *p, const float *t, int m, int n0, int mr, const int act) {
    const vit__epi *e = p->e;
    const float *g = e && e->g ? e->g + n0 : NULL;
    int i, j;
    for (i = 0; i < mr; i++) {
        const float *ti = t + (size_t)i * 2 * VIT__NR, *ri = vit__epi_r(e, m + i, n0);
        uint16_t *yi = p->yb + (size_t)(m + i) * p->ldyb + n0;
        for (j = 0; j < 2 * VIT__NR; j += VIT__VW)
            vit__v_store_bf16(yi + j, vit__epi_v(vit__v_load(ti + j), act, g ? g + j : NULL, ri ? ri + j : NULL));
    }
}
static void vit__epi_bf16(const vit__mm *p, const float *t, int m, int n0, int mr) {
    switch (p->e ? p->e->act : VIT__EPI_NONE) {
    case VIT__EPI_NONE: vit__epi_bf16_c(p, t, m, n0, mr, VIT__EPI_NONE); return;
    case VIT_ACT_GELU: vit__epi_bf16_c(p, t, m, n0, mr, VIT_ACT_GELU); return;
    default: vit__epi_bf16_c(p, t, m, n0, mr, p->e->act); return;
    }
}
#endif

#if VIT__DOT_BF16 && VIT__DOT_I8
/* Rows [m, m + mr) of one head's outputs of an I8 qkv product (two panels from n0, t as the wide tile left them,
   2 NR floats a row; vit__mm_q8) as the I8 attention reads them. A row of yb is 3 C uint16 (ldyb apart): q's
   heads in int8 (q + 128 - XOFF, as vpdpbusd reads q) in its first C bytes, k's (s8) in the first C bytes from
   column C, v's in bf16 at columns 2 C on, as the attention's packing of V rounds it; q's and k's scales, each
   head's on its own (vit__q8s_row's, as the attention takes them), into yqs, a row's q heads then its k heads.
   The attention's bits, with a third of the bytes to memory and back (ViT-B/16 at B = 8: 14.5 MB a layer of f32)
   and no pass of its own over q and k: ViT-B/16 I8 at B = 8, one thread, five alternating runs, 0.345 -> 0.337 s
   (B = 1 and DINOv2-S/14 at 518 px ~1%). */
static float vit__q8s_row(unsigned char *d, const float *x, int n, int off, int qmax);
static void vit__q8_att_out(const vit__mm *p, const float *t, int m, int n0, int mr) {
    int i, j, C = p->N / 3;
    for (i = 0; i < mr; i++) {
        const float *ti = t + (size_t)i * 2 * VIT__NR;
        uint16_t *row = p->yb + (size_t)(m + i) * p->ldyb;
        if (n0 >= 2 * C)
            for (j = 0; j < 2 * VIT__NR; j += VIT__VW) vit__v_store_bf16(row + n0 + j, vit__v_load(ti + j));
        else
            p->yqs[(size_t)(m + i) * (2 * C / (2 * VIT__NR)) + n0 / (2 * VIT__NR)] =
                vit__q8s_row((unsigned char *)(void *)(row + (n0 < C ? 0 : C)) + (n0 < C ? n0 : n0 - C), ti,
                             2 * VIT__NR, n0 < C ? 128 - VIT__I8_XOFF : 0, 127);
    }
}
#endif

/* vit__gemm_block for the two whole panels from n0 (vit__mm_wide) on the wide tiles, VIT__MR / 2 rows at a time. */
static void vit__gemm_block2(const vit__mm *p, int k0, int kc, int kcb, int n0, int m0, int m1, int more) {
    const vit__epi *e = p->e;
    int m, i, last = k0 + kc == p->K, fused = 0, n1 = n0 + VIT__NR, f32 = p->wt == VIT_DTYPE_F32, K = p->K;
    int lines = 0, per = 0, done = 0, nk0 = k0 + kc < K ? k0 + kc : 0, nn0 = k0 + kc < K ? n0 : n0 + 2 * VIT__NR;
    int tiles = (m1 - m0 + VIT__MR / 2 - 1) / (VIT__MR / 2);
    size_t xrow = f32 ? (size_t)p->ldx : vit__xs_ld(p);
    const unsigned char *next[2] = {NULL, NULL};
    vit__tl t, u;
#if VIT__DOT_BF16 || VIT__DOT_I8
    int32_t wsum[2][VIT__NR]; /* I8: the panels' column sums over this block (vit__packed_wsum_at) */
#endif
    memset(&t, 0, sizeof t);
    t.ldy = p->ldy; t.first = k0 == 0; t.last = last; t.nv = VIT__NR; t.alpha = p->alpha;
    t.kc = f32 ? kc : p->wt == VIT_DTYPE_BF16 ? (kc + 1) / 2 : (kc + 3) / 4;
    t.ldx = (int)xrow;
    if (e && last && (p->wt == VIT_DTYPE_I8 || (e->act == VIT__EPI_NONE && !p->yb))) {
        t.e = e;
        fused = 1;
    }
    u = t;
    t.b = p->b ? p->b + n0 : NULL;
    u.b = p->b ? p->b + n1 : NULL;
    t.ws = p->ws ? p->ws + n0 : NULL;
    u.ws = p->ws ? p->ws + n1 : NULL;
    if (f32) {
        t.bf = (const float *)p->wq + (size_t)n0 * K + (size_t)k0 * VIT__NR;
        u.bf = t.bf + (size_t)VIT__NR * K;
        /* the next block of each panel, or the next two panels' first, as vit__gemm_block asks for them */
        for (i = 0; i < 2 && vit__mm_f32_inplace(p) && (nk0 || more); i++)
            if (nn0 + i * VIT__NR < p->N && vit__mm_packed(p, nn0 + i * VIT__NR))
                next[i] = (const unsigned char *)p->wq +
                          ((size_t)(nn0 + i * VIT__NR) * K + (size_t)nk0 * VIT__NR) * sizeof(float);
    }
#if VIT__DOT_BF16 || VIT__DOT_I8
    else {
        t.bp = vit__packed_panel(p, n0, k0);
        u.bp = vit__packed_panel(p, n1, k0);
        /* the next block of both panels, or the next two panels' first where this caller runs them (more), as for
           F32 (both packed: vit__mm_wide); those of another thread's claim would only crowd this core's caches (two
           threads at B = 1: 1.01x) */
        for (i = 0; i < 2 && nn0 + 2 * VIT__NR <= p->N && (nk0 || more); i++)
            next[i] = (const unsigned char *)vit__packed_panel(p, nn0 + i * VIT__NR, nk0);
    }
    if (p->wt == VIT_DTYPE_I8) {
        t.wsum = vit__packed_wsum_at(p, n0, k0, kc, wsum[0]);
        u.wsum = vit__packed_wsum_at(p, n1, k0, kc, wsum[1]);
    }
    if (t.e && p->wt == VIT_DTYPE_I8) {
        t.stream = vit__y_stream(p, n0);
        u.stream = vit__y_stream(p, n1);
    }
#endif
    lines = (K - nk0 < kcb ? K - nk0 : kcb) * VIT__NR * vit__dtype_bytes(p->wt) / 64; /* the next blocks' */
    per = (lines + tiles - 1) / tiles;
    if (t.e) {
        t.g = e->g ? e->g + n0 : NULL;
        u.g = e->g ? e->g + n1 : NULL;
    }
#if VIT__DOT_BF16
    float ybuf[VIT__MR / 2 * 2 * VIT__NR + 16], *yt = (float *)(((uintptr_t)ybuf + 63) & ~(uintptr_t)63);
    VIT_ASSERT(!p->yb || (k0 == 0 && last && (p->wt == VIT_DTYPE_BF16 || (p->yqs && !e)))); /* vit__mm_yb, _q8 */
#endif
    for (m = m0; m < m1; m += VIT__MR / 2) {
        int mr = m1 - m < VIT__MR / 2 ? m1 - m : VIT__MR / 2, stop = done + per < lines ? done + per : lines;
        vit__pf_share(&t, next[0], done, stop, t.kc, f32 ? 8 : 4); /* each run's share of lines */
        done = vit__pf_share(&u, next[1], done, stop, t.kc, f32 ? 8 : 4);
        if (e && e->r && last) /* as vit__gemm_block */
            for (i = 0; i < mr; i++) vit__prefetch_row(e->r + (size_t)(m + i) * e->ldr + n0, 2 * VIT__NR);
        for (i = m + VIT__MR / 2; k0 && VIT__SUMS_FROM_Y && i < m1 && i < m + VIT__MR; i++) /* as vit__gemm_block */
            vit__prefetch_row(p->y + (size_t)i * p->ldy + n0, 2 * VIT__NR);
        if (f32) {
            t.y = p->y + (size_t)m * p->ldy + n0;
            u.y = t.y + VIT__NR;
            t.xf = u.xf = p->x + (size_t)m * xrow + k0;
            t.r = vit__epi_r(t.e, m, n0);
            u.r = t.r ? t.r + VIT__NR : NULL;
            vit__tiles2_f32[mr](&t, &u);
        }
#if VIT__DOT_BF16 || VIT__DOT_I8
        else {
            vit__tl_rows(&t, p, m, n0);
            vit__tl_rows(&u, p, m, n1);
            t.x = (const uint32_t *)(const void *)p->xs + (size_t)m * xrow + k0 / (p->wt == VIT_DTYPE_BF16 ? 2 : 4);
            u.x = t.x;
        }
#endif
#if VIT__DOT_BF16
        if (p->yb) { /* the outputs to a buffer in L1, from there with the epilogue to yb (BF16) or as the I8
                        attention's operands */
            t.y = yt;
            u.y = yt + VIT__NR;
            t.ldy = u.ldy = 2 * VIT__NR;
#if VIT__DOT_I8
            if (p->wt == VIT_DTYPE_I8) {
                vit__tiles2_i8[mr](&t, &u);
                vit__q8_att_out(p, yt, m, n0, mr);
                continue;
            }
#endif
            vit__tiles2_bf16[mr](&t, &u);
            vit__epi_bf16(p, yt, m, n0, mr);
            continue;
        }
        if (p->wt == VIT_DTYPE_BF16) vit__tiles2_bf16[mr](&t, &u);
#endif
#if VIT__DOT_I8
        if (p->wt == VIT_DTYPE_I8) vit__tiles2_i8[mr](&t, &u);
#endif
        if (e && last && !fused) {
            vit__epi_tile(p->y, p->ldy, e, m, n0, mr, VIT__NR);
            vit__epi_tile(p->y, p->ldy, e, m, n1, mr, VIT__NR);
        }
    }
}
#else
#define vit__mm_wide(p, n0) 0
#endif

/* A few rows (a batch's class tokens through the head): packing would cost
   as much as the product, so each output is one vector dot product. */
static void vit__gemm_dot(const vit__mm *p, int n0, int n1) {
    int m, n, k, K = p->K;
    for (n = n0; n < n1; n++)
        for (m = 0; m < p->M; m++) {
            int st, j;
            const float *xm = p->x + (size_t)m * p->ldx, *wn = vit__w_row(p, n, 0, &st);
            vit__vf acc = vit__v_zero();
            float s, g[VIT__VW];
            for (k = 0; k + VIT__VW <= K; k += VIT__VW) {
                if (st != 1) /* a packed row: its values gathered, the same sums */
                    for (j = 0; j < VIT__VW; j++) g[j] = wn[(size_t)(k + j) * st];
                acc = vit__v_fma(vit__v_load(xm + k), vit__v_load(st == 1 ? wn + k : g), acc);
            }
            s = vit__v_hsum(acc);
            for (; k < K; k++) s += xm[k] * wn[(size_t)k * st];
            p->y[(size_t)m * p->ldy + n] = p->alpha * s + (p->b ? p->b[n] : 0.0f);
        }
}

/* k per block for the panel from n0: vit__kc's, or four times it (128 KiB of panel) for a panel packed at load,
   which is read where it lies (no buffer to fit): a tile then runs K = 768 in one call, not three (F32) or two
   (BF16), its sums leaving the registers for y once, and I8's fc2 at K = 3072 one, not three. ViT-B/16 at B = 1
   on one thread, alternating: f32 0.327-0.328 -> 0.321-0.324 s, bf16 0.170-0.171 -> 0.167-0.168 s (blocks of eight
   and sixteen times ran the same); at B = 8 bf16 1.40 -> 1.36 s. The sums are the same whatever the blocks
   (VIT__SUMS_FROM_Y; I8's are exact, its column sums those of the packed blocks in it: vit__packed_wsum_at).
   AVX2's tiles, six rows against a panel of 16, read twice the panel bytes a multiply-add: blocks of four times
   ran ViT-B/16 f32 slower there (the AVX2 build first measured: 0.338-0.342 -> 0.347-0.358 s), and blocks of two
   (VIT__LONG_FROM_Y) faster. AVX2's BF16 panel packed at load, pairs the widening tile reads (vit__tile_bfw), is
   half an F32 panel's bytes: 1,024 k are the F32 tile's 32 KiB, and ViT-B/16's K = 768 one call, not two. Whole
   BF16 passes on a Zen 3, two processes alternating pass by pass, median ratio: ViT-B/16 at B = 1 0.976x (20 of
   30 faster), two threads 0.954x; B = 8 0.964x; DINOv2-S/14 at 518 px (fc2's K = 1536) 0.968x. The F32 panel's
   1,024 k are 64 KiB, past the Zen 3's L1 (where a row block's later tiles read it again from L2), and faster
   there all the same: K = 768 one call, fc2's 3,072 three, not six. Whole F32 passes as above: ViT-B/16 at B = 1
   0.972x (30 of 50) and 0.976x (20 of 30), two threads 0.984x (17 of 30), B = 8 0.960x (7 of 10); DINOv2-S/14 at
   518 px, whose K = 384 ran in one block already but for fc2's, 1.010x (12 of 24). The later blocks start from
   y's sums as AVX-512's do (vit__tl.fy), and so do the F32 tile's on a panel packed here in blocks of 512 (an F32
   weight kept row-major, a BF16 one widened): the same bits packed or not. */
static int vit__kc_at(const vit__mm *p, int n0) {
    int kcb = vit__kc(p->wt);
    int dot = (p->wt == VIT_DTYPE_BF16 && VIT__DOT_BF16) || (p->wt == VIT_DTYPE_I8 && VIT__DOT_I8);
    if (VIT__LONG_FROM_Y(p->wt) && vit__mm_packed(p, n0)) return 2 * kcb;
    return VIT__SUMS_FROM_Y && (p->wt == VIT_DTYPE_F32 || dot) && vit__mm_packed(p, n0) ? 4 * kcb : kcb;
}

/* 1 when a BF16 product can write its outputs as bf16 (vit__mm.yb): every panel whole and run in pairs on the
   wide tiles, each in one k block (vit__kc_at), on AVX-512 without AMX (whose tiles take their own path). */
static int vit__mm_yb(const vit__mm *p) {
#if VIT__DOT_BF16 && !VIT__AMX_BUILD
    return VIT__WIDE && VIT__SUMS_FROM_Y && p->wt == VIT_DTYPE_BF16 && p->panel && p->N % (2 * VIT__NR) == 0 &&
           p->K <= vit__kc_at(p, 0);
#else
    (void)p;
    return 0;
#endif
}

/* 1 when an I8 product of N = 3 C outputs (a fused qkv, C a whole number of heads of 2 NR) can write them as the I8
   attention's operands (vit__mm.yb, yqs; vit__q8_att_out): as vit__mm_yb, and no epilogue. */
static int vit__mm_q8(const vit__mm *p) {
#if VIT__DOT_BF16 && VIT__DOT_I8 && !VIT__AMX_BUILD
    return VIT__WIDE && VIT__SUMS_FROM_Y && p->wt == VIT_DTYPE_I8 && p->panel && p->N % (6 * VIT__NR) == 0 &&
           p->K <= vit__kc_at(p, 0) && !p->e;
#else
    (void)p;
    return 0;
#endif
}

/* Every k block of the panel of columns from n0 (whole, or the last
   partial one) over rows [m0, m1), in order. */
static void vit__gemm_kblocks(const vit__mm *p, int n0, int m0, int m1) {
    int k0, kcb = vit__kc_at(p, n0), nv = p->N - n0 < VIT__NR ? p->N - n0 : VIT__NR;
    for (k0 = 0; k0 < p->K; k0 += kcb) vit__gemm_block(p, k0, p->K - k0 < kcb ? p->K - k0 : kcb, kcb, n0, nv, m0, m1);
}

/* The panels from n0 over rows [m0, m1): two on the wide tiles where they can (two, and vit__mm_wide), else one;
   how many panels ran. two > 1: the caller runs the next two panels after these as well. */
static int vit__gemm_kblocks_at(const vit__mm *p, int n0, int two, int m0, int m1) {
#if VIT__WIDE
    if (two && vit__mm_wide(p, n0)) {
        int k0, kcb = vit__kc_at(p, n0);
        for (k0 = 0; k0 < p->K; k0 += kcb)
            vit__gemm_block2(p, k0, p->K - k0 < kcb ? p->K - k0 : kcb, kcb, n0, m0, m1, two > 1);
        return 2;
    }
#endif
    (void)two;
    vit__gemm_kblocks(p, n0, m0, m1);
    return 1;
}

/* Threads take whole panels (two at a time where a claim holds both and the
   wide tiles can: vit__gemm_kblocks_at), and a panel runs its k blocks over all M
   rows: its M x NR outputs stay in L2 across the k blocks, and each piece
   of w is packed once, while the next is prefetched. Blocking rows of x
   for L2 instead, with k blocks outermost, measured 5-10% slower on Zen 5.
   A weight packed at load has nothing to pack again, so where x is too
   large for L2 its rows are blocked (vit__gemm_row_blocks says how); else
   (or with many threads, whose blocks would be thin) a panel past 2
   VIT__MC rows runs its k blocks over VIT__MC rows at a time,
   those rows' outputs and x nearer (DINOv2-S/14 at 518 px, f32, one
   thread: 0.851 -> 0.804 s; ViT-B/16 at batch 8: 2.80 -> 2.42 s). Each
   output sums its k blocks in order whatever the blocks: the same bits. */
static void vit__gemm_panels(const void *ctx, int i0, int i1, int thread) {
    const vit__mm *p = (const vit__mm *)ctx;
    int i;
    (void)thread;
    for (i = i0; i < i1;) {
        int n0 = i * VIT__NR, m0, mc = p->M, np = 1;
        if (p->wt == VIT_DTYPE_F32 && vit__mm_packed(p, n0) && p->M > 2 * VIT__MC) mc = VIT__MC;
        for (m0 = 0; m0 < p->M; m0 += mc)
            np = vit__gemm_kblocks_at(p, n0, i + 1 < i1 ? 1 + (i + 3 < i1) : 0, m0, p->M - m0 < mc ? p->M : m0 + mc);
        i += np;
    }
    simde_mm_sfence(); /* streamed stores are seen before the pool's barrier says done */
}

/* BF16 and I8 (x converted: vit__xs_ld): the blocks of x's rows (bounds at multiples of `align`, vit__row_bound)
   that a product of a weight packed at load runs against all its panels in turn, or 0 to run each panel over all
   rows. Each panel reads
   all of x: past L2 (2 MiB here) that was a pass of x from L3 per panel (ViT-B/16 at batch 8: fc2's x is 9.7 MB
   of bf16 pairs, read 24 times a product). Blocks of rows within VIT__XS_BYTES read x once and the weights once
   a block, a panel at a time. On the AMX tiles (align 32), ViT-B/16 at batch 8, one thread, alternating runs
   (best of 4): BF16 0.595 -> 0.513 s, I8 0.395 -> 0.357 s; two threads 0.290 -> 0.255 and 0.273 -> 0.228 s;
   blocks within 512 KiB 0.597 s, 2 MiB 0.541 s; on the vdpbf16ps and vpdpbusd tiles (align MR; built with
   VIT_NO_AMX) 4.09 -> 3.76 s and 0.918 -> 0.843 s. Where x fits in L2 (batch 1: fc2's 1.2 MB) each panel reads it
   from there: blocks would only read the weights again. The blocks come in a multiple of the threads, none
   thinner than align rows; every row's sums are the same whatever its block. */
#ifndef VIT__XS_BYTES
#define VIT__XS_BYTES (1024 * 1024)
#endif

/* Blocks for M rows of about mc rows each at most: their count, a multiple of the threads. */
static int vit__row_split(int M, int mc, int threads) {
    int blocks = (M + mc - 1) / mc;
    return (blocks + threads - 1) / threads * threads;
}

static int vit__xs_row_blocks(const vit__mm *p, int threads, int align) {
    size_t row = vit__xs_ld(p) * 4;
    int mc;
    if (!p->panel || (double)p->M * (double)row <= 2.0 * VIT__XS_BYTES) return 0; /* x within L2 */
    mc = (int)(VIT__XS_BYTES / row) / align * align;
    return vit__row_split(p->M, mc < align ? align : mc, threads);
}

#ifdef VIT__MC_AUTO
/* VIT__MC_BYTES: a quarter of one core's L2, within 128-512 KiB, as x86's CPUID reports the L2 (leaf 0x80000006,
   which AMD and Intel both fill; asked once); 512 KiB, a quarter of the Xeon's 2 MiB where the blocks were first
   measured, where the build cannot ask (other CPUs, other compilers). A Zen 3 core has 512 KiB: at K = 384 its 128
   KiB blocks are 81 rows where 512 KiB's were 276 (x's block had filled the L2 the panels and y need too), and
   DINOv2-S/14 f32 at 518 px, one thread, ran faster in 19 of 24 alternating pairs (medians 0.92x, 0.97x, 0.97x
   over three runs of 8; its products at K = 384 alone 5-8%); two threads and ViT-B/16 at B = 8 (K = 768: 192
   rows, not 170) the same (medians 1.00x, 1.01x). The rows' sums are the same whatever the blocks: the same bits. */
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
static size_t vit__mc_bytes(void) {
    static unsigned kib; /* the L2's KiB, once asked; 1: not known */
    unsigned k = __atomic_load_n(&kib, __ATOMIC_ACQUIRE), a, b, c, d;
    size_t q;
    if (!k) {
        k = __get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000006u &&
                    __get_cpuid(0x80000006u, &a, &b, &c, &d) && c >> 16
                ? c >> 16
                : 1;
        __atomic_store_n(&kib, k, __ATOMIC_RELEASE);
    }
    q = k == 1 ? 512 * 1024 : (size_t)k * 1024 / 4;
    return q < 128 * 1024 ? 128 * 1024 : q > 512 * 1024 ? 512 * 1024 : q;
}
#else
static size_t vit__mc_bytes(void) { return 512 * 1024; }
#endif
#endif

/* A product's row blocks (their bounds at multiples of MR), or 0 for none: BF16
   and I8 as vit__xs_row_blocks says; an F32 weight packed at load, blocks of at least VIT__MC / 3 rows of x
   within VIT__MC_BYTES (a quarter of the core's L2, vit__mc_bytes) that leave none
   nearly empty. Each block then runs against every panel in turn, so each
   panel reads x from L2 and the weights (a few MB) come again once a
   block; threads take blocks of rows, not panels, their count a multiple
   of the threads, each thread's x in its own L2. 1370 x 384 x 1152
   (DINOv2-S/14's qkv at 518 px) went 117 -> 134 GFLOP/s on one thread and
   197 -> 246 on two (whose panels had both read all of x); DINOv2-S/14 at
   518 px f32 0.837 -> 0.789 s (one thread), 0.477 -> 0.432 s (two);
   ViT-B/16 at batch 8 1.34 -> 1.18 s (two; alternating, best of 3-5). At
   K = 3072, 85 rows a block measured 5% slower than VIT__MC's blocks.
   Rows so wide that such a block would be thinner than VIT__MC / 3 (fc2's
   x at K = 3072: 42 rows) take blocks of VIT__MC rows, x in L3 (4.7 MB
   at K = 3072), where each panel running over its VIT__MC rows in turn
   swept all of x (19 MB at batch 8) a panel: ViT-B/16's fc2 at batch 8
   on Zen 4 went 99 -> 106 GFLOP/s on one thread, 200 -> 207 on two. */
static int vit__gemm_row_blocks(const vit__mm *p, int threads) {
    int mc = (int)(VIT__MC_BYTES / ((size_t)p->K * sizeof(float))), blocks;
    if (p->wt != VIT_DTYPE_F32) return vit__xs_row_blocks(p, threads, VIT__MR); /* the vdpbf16ps, vpdpbusd tiles */
    if (mc < VIT__MC / 3) mc = VIT__MC;
    if (!p->panel || 2 * p->M <= 3 * mc) return 0;
    blocks = vit__row_split(p->M, mc, threads);
    /* many threads: their blocks would be thin, and the panels theirs again */
    return ((p->M + blocks - 1) / blocks + VIT__MR - 1) / VIT__MR * VIT__MR >= VIT__MC / 3 ? blocks : 0;
}

/* Row blocks [b0, b1), each against every panel. */
static void vit__gemm_rows(const void *ctx, int b0, int b1, int thread) {
    const vit__mm_rows *r = (const vit__mm_rows *)ctx;
    const vit__mm *p = r->p;
    int n0, b;
    (void)thread;
    for (b = b0; b < b1; b++) {
        int m0 = vit__row_bound(r, b), m1 = vit__row_bound(r, b + 1);
#if VIT__XP
        if (p->xp) vit__xp_fill(p, m0, m1); /* the block's x packed just before its panels read it from L2 */
#endif
        for (n0 = 0; m0 < m1 && n0 < p->N;) n0 += VIT__NR * vit__gemm_kblocks_at(p, n0, 2, m0, m1);
    }
    simde_mm_sfence(); /* as vit__gemm_panels: an I8 product's row blocks stream y too (batch 8) */
}

/* Pairs of panels [u0, u1): the threads' unit where the wide tiles run, so that every claim holds whole pairs
   (claims of single panels, as the pool hands out for a product of 24 panels on two threads, ran every panel
   on the MR x NR tiles). */
static void vit__gemm_pairs(const void *ctx, int u0, int u1, int thread) {
    const vit__mm *p = (const vit__mm *)ctx;
    int np = (p->N + VIT__NR - 1) / VIT__NR;
    vit__gemm_panels(ctx, 2 * u0, 2 * u1 < np ? 2 * u1 : np, thread);
}

static int vit__xp_pays(int K, int N);
/* 1 when a product packs x into its scratch for the tiles (vit__xp_fill): F32 where it pays (vit__xp_pays); BF16
   on the widening tiles always (vit__tile_bfw_x), since it rounds x into its scratch anyway: packed in that same
   pass rather than as rows (vit__xs_fill), with its LayerNorm (no caller converts x there: xs_ld is the bf16 dot
   product's; vit__tile_bfw reads x packed only). Whole BF16 forwards on a Zen 3, two processes alternating pass by
   pass, median ratio: DINOv2-S/14 at 518 px 0.976x one thread (20 of 30 faster), 0.975x two; ViT-B/16 at B = 1
   0.986x, two threads 0.967x; B = 8 0.958x (14 of 16). The same values in the same order: the same bits. */
static int vit__xp_use(const vit__mm *p) {
#if VIT__XP && VIT__BF16_WIDE
    if (p->wt == VIT_DTYPE_BF16) return p->xs && !p->xs_ld && !p->nn;
#endif
    return p->wt == VIT_DTYPE_F32 && p->xs && !p->nn && vit__xp_pays(p->K, p->N);
}

static void vit__gemm_tiles(const vit__mm *p) {
    int threads = vit__mm_threads(p), np = (p->N + VIT__NR - 1) / VIT__NR;
    vit__mm_rows r = vit__mm_rows_of(p, vit__gemm_row_blocks(p, threads), VIT__MR);
    vit__mm q;
    VIT_ASSERT(!p->ln || p->wt != VIT_DTYPE_F32 || vit__xp_use(p)); /* F32's LayerNorm is done as x is packed */
    if (vit__xp_use(p)) { /* row blocks pack their own rows (vit__gemm_rows); else all rows first */
        q = *p;
        q.xp = 1;
        p = &q;
        r.p = p;
#if VIT__XP
        if (!r.blocks)
            vit__parallel((p->M + VIT__MR - 1) / VIT__MR, p->threaded ? vit__par_threads((double)p->M * p->K) : 1,
                          vit__xp_fill_tiles, p);
#endif
    }
    if (r.blocks) vit__parallel(r.blocks, threads, vit__gemm_rows, &r);
    else if (VIT__WIDE && threads > 1 && vit__mm_wide(p, 0)) vit__parallel((np + 1) / 2, threads, vit__gemm_pairs, p);
    else vit__parallel(np, threads, vit__gemm_panels, p);
}

/* BF16 and I8 products on Intel's AMX tiles (Sapphire Rapids and later),
   where the compiler targets them (-march=native there) and Linux grants
   the tile state. SIMDe has no AMX: like the AVX-512 forms above, these
   are native intrinsics behind the target's own macros, and every other
   build runs the vdpbf16ps and vpdpbusd tiles. The panels of pairs and
   quads (packed here as vit__gemm_block packs them, or by vit__pack_weight
   at load) are already AMX's B layout: 16 rows of k groups are one tile of
   16 columns at a stride of NR groups, and x as converted (xs, groups in
   row order) is its A layout. Tiles of 32 rows keep four 16 x 16 sums in
   tmm0-3; a weight packed at load runs all of K at once, one packed here
   goes in vit__gemm_block's k blocks with the sums kept in y between them
   (the same bits: an f32 sum goes to y and back unchanged, I8's are
   exact). The end is the vdpbf16ps tiles' (alpha, bias, epilogue) or
   vit__tile_i8_finish. One TDPBF16PS is 16 x 16 x 32 multiply-adds,
   TDPBUSD 16 x 16 x 64. BF16 sums the pairs in f32 as vdpbf16ps does, in
   another order (and AMX flushes bf16 denormals): within the BF16
   tolerance of vit__matmul_ref, not its bits; I8 gives vpdpbusd's bits.
   Which products take the tiles depends on M, K, N and the type only, never
   on the packing or the thread count. */
#if VIT__AMX_BUILD
#define VIT__AMX 1
#include <immintrin.h>
#include <sys/syscall.h>
long syscall(long number, ...); /* unistd.h declares it only for _DEFAULT_SOURCE, not under -std=c99 */

/* 1 once the kernel lets this process use the tile data (asked once: arch_prctl ARCH_REQ_XCOMP_PERM for
   XFEATURE_XTILEDATA, 0x1023 and 18; a kernel before 5.16 refuses, and then the vdpbf16ps tiles run). */
static int vit__amx_ready(void) {
    static int state; /* 0 not asked, 1 granted, -1 refused */
    int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
    if (!s) {
        s = syscall(SYS_arch_prctl, 0x1023, 18) == 0 ? 1 : -1;
        __atomic_store_n(&state, s, __ATOMIC_RELEASE);
    }
    return s > 0;
}

/* I8 too where the build has AMX-INT8 and keeps x as u8 (TDPBUSD, as vpdpbusd: u8 x by s8 w) */
#if defined(__AMX_INT8__) && VIT__DOT_I8 && VIT__I8_XOFF == 0
#define VIT__AMX_I8 1
#endif

/* A whole panel at least, K a multiple of the tiles' 64 bytes of k (32 BF16 pairs, 64 I8 quads), 16 rows at least. */
static int vit__amx_use(const vit__mm *p) {
#ifdef VIT__AMX_I8
    if (p->wt == VIT_DTYPE_I8 && p->N >= VIT__NR && p->K % 64 == 0 && p->M >= 16) return vit__amx_ready();
#endif
    return p->wt == VIT_DTYPE_BF16 && p->N >= VIT__NR && p->K % 32 == 0 && p->M >= 16 && vit__amx_ready();
}

typedef struct vit__amx_cfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} vit__amx_cfg;

/* mr rows of y's 16 x 32 block into tiles c and d (numbers, as the intrinsics want them): straight from y when
   all 16 rows are there, else through the zero-padded copy pad (64-byte aligned, 16 x 32 floats). */
#define VIT__AMX_LOAD(c, d, y, ldy, mr, pad)                                                                       \
    do {                                                                                                           \
        if ((mr) == 16) {                                                                                          \
            _tile_loadd(c, y, (ldy) * 4);                                                                          \
            _tile_loadd(d, (y) + 16, (ldy) * 4);                                                                   \
        } else {                                                                                                   \
            int r_;                                                                                                \
            memset(pad, 0, 16 * VIT__NR * sizeof(float));                                                          \
            for (r_ = 0; r_ < (mr); r_++) memcpy((pad) + r_ * VIT__NR, (y) + (size_t)r_ * (ldy), VIT__NR * 4);     \
            _tile_loadd(c, pad, VIT__NR * 4);                                                                      \
            _tile_loadd(d, (pad) + 16, VIT__NR * 4);                                                               \
        }                                                                                                          \
    } while (0)

typedef struct vit__amx_fin vit__amx_fin;
static void vit__amx_fin_rows(vit__amx_fin *f, int rows);

/* The sums of rows [m, m + 16) (tmm0-1) and, when two, [m + 16, m + 32) (tmm2-3) of k block [k0, k0 + kc)
   against the panel bp, added to what the tiles hold: 16 groups of 4 bytes a row per step (32 k of BF16 pairs,
   64 of I8 quads), A in tmm4-5 (x: xrow groups a row, whole 16-row tiles: the callers' rows past their data are
   zeros, vit__xs_rows and vit__att_pad), B's two halves of 16 columns in tmm6-7; and pfn lines from pf asked
   for at each step (part of the next panel: vit__amx_dot), and fin_rows rows of fin finished (vit__amx_panel). */
static void vit__amx_dot_ld(int wt, const uint32_t *xs, size_t xrow, const uint32_t *bp, int k0, int kc, int m,
                            int two, const unsigned char *pf, int pfn, vit__amx_fin *fin, int fin_rows) {
    int per = wt == VIT_DTYPE_BF16 ? 2 : 4, g, i;
    long lx = (long)(xrow * 4);
    for (g = 0; g < kc / per; g += 16) {
        const uint32_t *b = bp + (size_t)g * VIT__NR, *x = xs + (size_t)m * xrow + k0 / per + g;
        for (i = 0; i < pfn; i++, pf += 64) VIT__PREFETCH(pf);
        if (fin) vit__amx_fin_rows(fin, fin_rows); /* the vector units finish the previous block meanwhile */
        _tile_loadd(6, b, VIT__NR * 4);
        _tile_loadd(7, b + 16, VIT__NR * 4);
        _tile_loadd(4, x, lx);
        if (two) _tile_loadd(5, x + (size_t)16 * xrow, lx);
#ifdef VIT__AMX_I8
        if (wt == VIT_DTYPE_I8) {
            _tile_dpbusd(0, 4, 6); _tile_dpbusd(1, 4, 7);
            if (two) { _tile_dpbusd(2, 5, 6); _tile_dpbusd(3, 5, 7); }
            continue;
        }
#endif
        _tile_dpbf16ps(0, 4, 6); _tile_dpbf16ps(1, 4, 7);
        if (two) { _tile_dpbf16ps(2, 5, 6); _tile_dpbf16ps(3, 5, 7); }
    }
}

/* The same with x as a product's xs lays it out (vit__xs_ld), asking for the part of the next panel (next,
   bytes long, NULL for none) that the block of 32 rows from m should, of the rows [m0, m1) this panel runs: the
   panel a thread runs next comes from memory (at batch 1 each weight is read once a forward), and its first row
   block's tiles stalled on it. Its lines spread over the steps of the current panel's row blocks: BF16 197 x 768
   x 3072 from memory 630 -> 720 GFLOP/s, from L3 800 -> 900. (k blocks of the panel kept in L1 across the row
   blocks, the sums through y between them, ran 10-25% slower.) */
static void vit__amx_dot(const vit__mm *p, const uint32_t *bp, int k0, int kc, int m0, int m1, int m, int two,
                         const unsigned char *next, size_t bytes, vit__amx_fin *fin, int fin_rows) {
    int per = p->wt == VIT_DTYPE_BF16 ? 2 : 4, steps = (kc / per + 15) / 16, blocks = (m1 - m0 + 31) / 32, pfn = 0;
    size_t lines = bytes / 64, mine = (lines + (size_t)blocks - 1) / (size_t)blocks;
    size_t from = (size_t)((m - m0) / 32) * mine;
    if (next && from < lines) {
        if (from + mine > lines) mine = lines - from;
        pfn = (int)((mine + (size_t)steps - 1) / (size_t)steps);
        next += from * 64;
        if ((size_t)pfn * (size_t)steps > mine) pfn = (int)(mine / (size_t)steps); /* never past the panel */
    }
    vit__amx_dot_ld(p->wt, (const uint32_t *)p->xs, vit__xs_ld(p), bp, k0, kc, m, two, next, pfn, fin, fin_rows);
}

/* Row m of a BF16 product's sums (cr, NR of them, columns from n0) out to y: alpha acc + b, as the vdpbf16ps
   tiles finish, then the epilogue act(y) * g + r while the row is in registers (vit__epi_tile's operations in
   its order, so the same bits as its pass over y after the store: that pass took 6% of a BF16 forward). */
static void vit__amx_row_out(const vit__mm *p, int m, const float *cr, int n0) {
    const vit__epi *e = p->e;
    const float *g = e && e->g ? e->g + n0 : NULL, *r = vit__epi_r(e, m, n0);
    float *yr = p->y + (size_t)m * p->ldy + n0;
    int j;
    for (j = 0; j < VIT__NR; j += VIT__VW) {
        vit__vf v = vit__v_add(vit__v_mul(vit__v_set1(p->alpha), vit__v_load(cr + j)),
                               p->b ? vit__v_load(p->b + n0 + j) : vit__v_zero());
        vit__v_store(yr + j, e ? vit__epi_v(v, e->act, g ? g + j : NULL, r ? r + j : NULL) : v);
    }
}

/* BF16: k block [k0, k0 + kc) of panel n0 (whole), all M rows, the panel of pairs bp (NR pairs a row). */
static void vit__amx_block(const vit__mm *p, const uint32_t *bp, int k0, int kc, int n0, float *pad) {
    int M = p->M, ldy = p->ldy, first = k0 == 0, last = k0 + kc == p->K, m, r, h;
    for (m = 0; m < M; m += 32) {
        int mr = M - m < 32 ? M - m : 32, n1 = mr < 16 ? mr : 16, n2 = mr - n1;
        float *y0 = p->y + (size_t)m * ldy + n0, *y1 = y0 + (size_t)16 * ldy;
        if (first) {
            _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
        } else {
            VIT__AMX_LOAD(0, 1, y0, ldy, n1, pad);
            if (n2) VIT__AMX_LOAD(2, 3, y1, ldy, n2, pad);
        }
        vit__amx_dot(p, bp, k0, kc, 0, M, m, n2 > 0, NULL, 0, NULL, 0);
        for (h = 0; h < 2; h++) {
            int n = h ? n2 : n1;
            float *yh = h ? y1 : y0;
            if (!n) break;
            /* the sums out: raw into y before the last block, else alpha acc + b as the vdpbf16ps tiles finish */
            if (!last && n == 16) {
                if (h) { _tile_stored(2, yh, ldy * 4); _tile_stored(3, yh + 16, ldy * 4); }
                else { _tile_stored(0, yh, ldy * 4); _tile_stored(1, yh + 16, ldy * 4); }
                continue;
            }
            if (h) { _tile_stored(2, pad, VIT__NR * 4); _tile_stored(3, pad + 16, VIT__NR * 4); }
            else { _tile_stored(0, pad, VIT__NR * 4); _tile_stored(1, pad + 16, VIT__NR * 4); }
            for (r = 0; r < n; r++) {
                float *yr = yh + (size_t)r * ldy;
                const float *cr = pad + (size_t)r * VIT__NR;
                if (!last) {
                    memcpy(yr, cr, VIT__NR * sizeof(float));
                    continue;
                }
                vit__amx_row_out(p, m + 16 * h + r, cr, n0);
            }
        }
    }
}

#ifdef VIT__AMX_I8
/* The finish's constants for I8 panel n0 (whole) with its column sums wsum: the epilogue, and y streamed past
   the caches when far larger than them (vit__y_stream), on the last k block. */
static vit__tl vit__tl_i8(const vit__mm *p, int n0, const int32_t *wsum, int first, int last) {
    vit__tl t;
    memset(&t, 0, sizeof t);
    t.ldy = p->ldy; t.first = first; t.last = last; t.nv = VIT__NR; t.alpha = p->alpha;
    t.b = p->b ? p->b + n0 : NULL; t.ws = p->ws + n0; t.wsum = wsum;
    if (last) {
        t.e = p->e;
        t.g = p->e && p->e->g ? p->e->g + n0 : NULL;
        t.stream = vit__y_stream(p, n0);
    }
    return t;
}

/* I8: k block [k0, k0 + kc) of panel n0 (whole) against the panel of quads bp and its column sums wsum: the
   integer sums S from the tiles, then vit__tile_i8_finish as the vpdpbusd tiles end (the zero points, the blocks
   summed in y, the scales, bias and epilogue). S is exact either way: the same bits as those tiles. */
static void vit__amx_block_i8(const vit__mm *p, const uint32_t *bp, const int32_t *wsum, int k0, int kc, int n0) {
    int32_t acc[32][VIT__NR];
    int M = p->M, m, h;
    vit__tl t = vit__tl_i8(p, n0, wsum, k0 == 0, k0 + kc == p->K);
    for (m = 0; m < M; m += 32) {
        int mr = M - m < 32 ? M - m : 32, n1 = mr < 16 ? mr : 16, n2 = mr - n1;
        _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
        vit__amx_dot(p, bp, k0, kc, 0, M, m, n2 > 0, NULL, 0, NULL, 0);
        _tile_stored(0, acc[0], VIT__NR * 4);
        _tile_stored(1, acc[0] + 16, VIT__NR * 4);
        if (n2) {
            _tile_stored(2, acc[16], VIT__NR * 4);
            _tile_stored(3, acc[16] + 16, VIT__NR * 4);
        }
        for (h = 0; h < 2; h++) {
            int n = h ? n2 : n1;
            if (!n) break;
            vit__tl_rows(&t, p, m + 16 * h, n0);
            vit__tile_i8_finish(&t, n, acc + 16 * h);
        }
    }
}
#endif

/* A block of 32 rows whose sums left the tiles (buf: 32 x NR floats, I8's int32) and the rows of it finished so
   far: y's values as the block functions above finish them (alpha acc + b and the epilogue; I8's finish). */
struct vit__amx_fin {
    const vit__mm *p;
    int n0, m, rows, done;     /* the block's first row and rows; rows done */
    float *buf;
#ifdef VIT__AMX_I8
    vit__tl t;                 /* I8: the finish's constants (the rows' pointers set per slice) */
#endif
};

static void vit__amx_fin_rows(vit__amx_fin *f, int rows) {
    const vit__mm *p = f->p;
    int r0 = f->done, r1 = f->done + rows < f->rows ? f->done + rows : f->rows, r;
    if (r0 >= r1) return;
    f->done = r1;
#ifdef VIT__AMX_I8
    if (p->wt == VIT_DTYPE_I8) {
        vit__tl_rows(&f->t, p, f->m + r0, f->n0);
        vit__tile_i8_finish(&f->t, r1 - r0, (int32_t(*)[VIT__NR])(void *)(f->buf + (size_t)r0 * VIT__NR));
        return;
    }
#endif
    for (r = r0; r < r1; r++)
        vit__amx_row_out(p, f->m + r, f->buf + (size_t)r * VIT__NR, f->n0);
}

/* A panel packed at load (bp, all of K; I8 with its column sums wsum over K) for rows [m0, m1), in blocks of 32
   rows, each block finished while the next one's tiles run: the block's sums go to one of two buffers and
   the vector units finish a few of its rows at each step of the next block, where finishing after each
   block left the tiles idle (a 32 x 32 block of K = 768 is 96 TDPBF16PS, and its finish as long as a third
   of them when the tiles run at full speed). The same bits as vit__amx_block and vit__amx_block_i8. */
static void vit__amx_panel(const vit__mm *p, const uint32_t *bp, const int32_t *wsum, int n0, int m0, int m1,
                           const unsigned char *next, size_t bytes) {
    float bufs[2 * 32 * VIT__NR + 16], *b0 = (float *)(((uintptr_t)bufs + 63) & ~(uintptr_t)63);
    int K = p->K, per = p->wt == VIT_DTYPE_BF16 ? 2 : 4, steps = (K / per + 15) / 16, m, i = 0;
    int fin_rows = (32 + steps - 1) / steps;
    vit__amx_fin f;
    memset(&f, 0, sizeof f);
    f.p = p;
    f.n0 = n0;
#ifdef VIT__AMX_I8
    if (p->wt == VIT_DTYPE_I8) f.t = vit__tl_i8(p, n0, wsum, 1, 1);
#else
    (void)wsum;
#endif
    for (m = m0; m < m1; m += 32, i ^= 1) {
        int mr = m1 - m < 32 ? m1 - m : 32;
        float *buf = b0 + (size_t)i * 32 * VIT__NR;
        _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
        vit__amx_dot(p, bp, 0, K, m0, m1, m, mr > 16, next, bytes, m > m0 ? &f : NULL, fin_rows);
        vit__amx_fin_rows(&f, 32); /* what the steps left of the previous block */
        _tile_stored(0, buf, VIT__NR * 4);
        _tile_stored(1, buf + 16, VIT__NR * 4);
        if (mr > 16) {
            _tile_stored(2, buf + 16 * VIT__NR, VIT__NR * 4);
            _tile_stored(3, buf + 16 * VIT__NR + 16, VIT__NR * 4);
        }
        f.m = m; f.rows = mr; f.done = 0; f.buf = buf;
    }
    vit__amx_fin_rows(&f, 32);
}

/* This thread's tiles: tmm0-7 all 16 rows of 64 bytes. The configuration is constant data, every byte set: GCC
   12's _tile_loadconfig tells the compiler that it reads 8 bytes, and at -O1 one built on the stack lost the
   stores that zero tiles 8-15's entries, on which LDTILECFG faults (the first BF16 product crashed). */
static const vit__amx_cfg vit__amx_cfg_all = {1, 0, {0}, {64, 64, 64, 64, 64, 64, 64, 64},
                                              {16, 16, 16, 16, 16, 16, 16, 16}};
static void vit__amx_config(void) { _tile_loadconfig(&vit__amx_cfg_all); }

/* Whole panel i of a weight packed at load, rows [m0, m1): one run over all of K, the sums never leaving the
   tiles (the same bits as vit__gemm_block's k blocks: a BF16 sum goes to y and back as the f32 it is, I8's S
   and block sums are exact); part of panel i + 1 asked for meanwhile unless it is i1. */
static void vit__amx_packed(const vit__mm *p, int i, int i1, int m0, int m1) {
    int n0 = i * VIT__NR, K = p->K;
    const unsigned char *next =
        i + 1 < i1 ? (const unsigned char *)vit__packed_panel(p, n0 + VIT__NR, 0) : NULL;
    size_t bytes = (size_t)K * VIT__NR * (p->wt == VIT_DTYPE_BF16 ? 2 : 1);
#ifdef VIT__AMX_I8
    if (p->wt == VIT_DTYPE_I8) {
        int32_t wsum[VIT__NR];
        int j, k0, kcb = vit__kc(p->wt);
        for (j = 0; j < VIT__NR; j++) wsum[j] = 0;
        for (k0 = 0; k0 < K; k0 += kcb) {
            const int32_t *bs = vit__packed_wsum(p, n0, k0, kcb);
            for (j = 0; j < VIT__NR; j++) wsum[j] += bs[j];
        }
        vit__amx_panel(p, vit__packed_panel(p, n0, 0), wsum, n0, m0, m1, next, bytes);
        return;
    }
#endif
    vit__amx_panel(p, vit__packed_panel(p, n0, 0), NULL, n0, m0, m1, next, bytes);
}

/* Panels [i0, i1), all rows: packed at load (vit__amx_packed), else packed here in vit__gemm_block's k blocks. */
static void vit__gemm_amx_panels(const void *ctx, int i0, int i1, int thread) {
    const vit__mm *p = (const vit__mm *)ctx;
    float buf[VIT__KC * VIT__NR + 16], *bp = (float *)(((uintptr_t)buf + 63) & ~(uintptr_t)63);
    float pbuf[16 * VIT__NR + 16], *pad = (float *)(((uintptr_t)pbuf + 63) & ~(uintptr_t)63);
    int i, kcb = vit__kc(p->wt), K = p->K;
    (void)thread;
    vit__amx_config();
    for (i = i0; i < i1; i++) {
        int n0 = i * VIT__NR, k0;
        if (vit__mm_packed(p, n0)) {
            vit__amx_packed(p, i, i1, 0, p->M);
            continue;
        }
        for (k0 = 0; k0 < K; k0 += kcb) {
            int kc = K - k0 < kcb ? K - k0 : kcb;
            const uint32_t *b = (const uint32_t *)(const void *)bp;
#ifdef VIT__AMX_I8
            if (p->wt == VIT_DTYPE_I8) {
                int32_t wsum[VIT__NR];
                vit__pack_panel_i8((uint32_t *)(void *)bp, wsum, p, n0, VIT__NR, k0, kc);
                vit__amx_block_i8(p, b, wsum, k0, kc, n0);
                continue;
            }
#endif
            vit__pack_panel_bf16((uint32_t *)(void *)bp, p, n0, VIT__NR, k0, kc);
            vit__amx_block(p, b, k0, kc, n0, pad);
        }
    }
    _tile_release();
    simde_mm_sfence(); /* streamed stores are seen before the pool's barrier says done */
}

/* Row blocks [b0, b1), each against every whole panel. */
static void vit__gemm_amx_rows(const void *ctx, int b0, int b1, int thread) {
    const vit__mm_rows *r = (const vit__mm_rows *)ctx;
    const vit__mm *p = r->p;
    int b, i, whole = p->N / VIT__NR;
    (void)thread;
    vit__amx_config();
    for (b = b0; b < b1; b++) {
        int m0 = vit__row_bound(r, b), m1 = vit__row_bound(r, b + 1);
        for (i = 0; m0 < m1 && i < whole; i++) vit__amx_packed(p, i, whole, m0, m1);
    }
    _tile_release();
    simde_mm_sfence();
}

/* The whole panels on the tiles; a last partial panel through vit__gemm_block, as vit__gemm_panels runs it. */
static void vit__gemm_amx(const vit__mm *p) {
    int whole = p->N / VIT__NR, threads = vit__mm_threads(p);
    vit__mm_rows r = vit__mm_rows_of(p, vit__xs_row_blocks(p, threads, 32), 32);
    if (r.blocks) vit__parallel(r.blocks, threads, vit__gemm_amx_rows, &r);
    else vit__parallel(whole, threads, vit__gemm_amx_panels, p);
    if (whole * VIT__NR < p->N) vit__gemm_kblocks(p, whole * VIT__NR, 0, p->M);
}
#endif
#endif /* !VIT_NO_SIMD */
#ifndef VIT__AMX
#define VIT__AMX 0
#endif

/* Products with few rows: a small batch through SE's 1x1 convs, an MLP
   or a classifier. The GEMM packs each NR-column panel of w before tiles of rows run down it;
   with a single tile of rows the packing costs as much as the arithmetic.
   Here x is transposed instead, VIT__KF columns at a time, into xt (KF,
   VIT__VW) with zeros past row M (it is small), and each output column is
   sum_k w[n][k] xt[k]: one broadcast of w, read where it lies, and one FMA
   per k for all M rows at once, VIT__NF columns side by side to hide the
   FMA latency. k ascends in KF blocks with one FMA per k, as in the GEMM,
   so |fast - ref| is rounding only; threads take whole blocks of columns,
   so results do not depend on their number. */

#define VIT__FEW_MIN 4 /* below 4 rows the GEMM's dot products do as well */
/* Where it beats the GEMM (measured on Zen 5, AVX-512 and AVX2 builds, M =
   4..16): from 3/4 of a vector of rows up, the GEMM's tiles of MR rows
   then run part empty, and only when N and K are both >= 128; below, the
   transpose of x weighs more than packing w (8 x 512 -> 32, SE's squeeze
   at B = 8: 2x slower than the GEMM). */
#define VIT__FEW_USE(M, K, N) \
    ((M) >= VIT__FEW_MIN && (M) <= VIT__VW && 4 * (M) >= 3 * VIT__VW && (N) >= 128 && (K) >= 128)

#ifndef VIT_NO_SIMD
#define VIT__KF 256 /* an xt block is 16 KiB with AVX-512: it stays in L1 */
#define VIT__NF 8

/* Columns [n0, n1) of y for all M <= VIT__VW rows. */
static void vit__gemm_few_cols(const vit__mm *p, int n0, int n1) {
    float buf[VIT__KF * VIT__VW + 16], *xt = (float *)(((uintptr_t)buf + 63) & ~(uintptr_t)63);
    const float *x = p->x, *b = p->b;
    int M = p->M, K = p->K, k0, k, m, n, j, st;
    for (k0 = 0; k0 < K; k0 += VIT__KF) {
        int kc = K - k0 < VIT__KF ? K - k0 : VIT__KF, first = k0 == 0, last = k0 + kc == K;
        for (m = 0; m < VIT__VW; m++)
            if (m < M)
                for (k = 0; k < kc; k++) xt[(size_t)k * VIT__VW + m] = x[(size_t)m * p->ldx + k0 + k];
            else
                for (k = 0; k < kc; k++) xt[(size_t)k * VIT__VW + m] = 0.0f;
        for (n = n0; n < n1; n += VIT__NF) {
            /* Rows of w past n1 repeat the last one; their sums are dropped. */
            const float *wr[VIT__NF];
            vit__vf a0 = vit__v_zero(), a1 = vit__v_zero(), a2 = vit__v_zero(), a3 = vit__v_zero();
            vit__vf a4 = vit__v_zero(), a5 = vit__v_zero(), a6 = vit__v_zero(), a7 = vit__v_zero();
            float t[VIT__NF][VIT__VW];
            int nf = n1 - n < VIT__NF ? n1 - n : VIT__NF;
            /* the 8 rows lie alike: blocks of 8 never straddle a panel's edge */
            for (j = 0; j < VIT__NF; j++) wr[j] = vit__w_row(p, j < nf ? n + j : n1 - 1, k0, &st);
            for (k = 0; k < kc; k++) {
                vit__vf v = vit__v_load(xt + (size_t)k * VIT__VW);
                size_t o = (size_t)k * st;
                a0 = vit__v_fma(vit__v_set1(wr[0][o]), v, a0);
                a1 = vit__v_fma(vit__v_set1(wr[1][o]), v, a1);
                a2 = vit__v_fma(vit__v_set1(wr[2][o]), v, a2);
                a3 = vit__v_fma(vit__v_set1(wr[3][o]), v, a3);
                a4 = vit__v_fma(vit__v_set1(wr[4][o]), v, a4);
                a5 = vit__v_fma(vit__v_set1(wr[5][o]), v, a5);
                a6 = vit__v_fma(vit__v_set1(wr[6][o]), v, a6);
                a7 = vit__v_fma(vit__v_set1(wr[7][o]), v, a7);
            }
            vit__v_store(t[0], a0); vit__v_store(t[1], a1); vit__v_store(t[2], a2); vit__v_store(t[3], a3);
            vit__v_store(t[4], a4); vit__v_store(t[5], a5); vit__v_store(t[6], a6); vit__v_store(t[7], a7);
            for (j = 0; j < nf; j++)
                for (m = 0; m < M; m++) {
                    float *yo = p->y + (size_t)m * p->ldy + n + j, sum = first ? t[j][m] : *yo + t[j][m];
                    *yo = last ? p->alpha * sum + (b ? b[n + j] : 0.0f) : sum;
                }
        }
    }
    if (p->e) vit__epi_tile(p->y, p->ldy, p->e, 0, n0, M, n1 - n0);
}

/* Threads claim blocks of VIT__NF columns, each block of blocks
   transposing x itself: a column's arithmetic does not depend on the block
   it falls in. */
static void vit__gemm_few_blocks(const void *ctx, int c0, int c1, int thread) {
    const vit__mm *p = (const vit__mm *)ctx;
    (void)thread;
    vit__gemm_few_cols(p, c0 * VIT__NF, c1 * VIT__NF < p->N ? c1 * VIT__NF : p->N);
}

static void vit__gemm_few(const vit__mm *p) {
    vit__parallel((p->N + VIT__NF - 1) / VIT__NF, vit__mm_threads(p), vit__gemm_few_blocks, p);
}
#endif

#ifndef VIT_NO_SIMD
/* Columns [64 i0, 64 i1) by dot products. */
static void vit__gemm_dots(const void *ctx, int i0, int i1, int thread) {
    const vit__mm *p = (const vit__mm *)ctx;
    int n0 = i0 * 64, n1 = i1 * 64 < p->N ? i1 * 64 : p->N;
    (void)thread;
    vit__gemm_dot(p, n0, n1);
    if (p->e) vit__epi_tile(p->y, p->ldy, p->e, 0, n0, p->M, n1 - n0);
}
#else
/* Rows [m0, m1) by the specification. */
static void vit__matmul_rows(const void *ctx, int m0, int m1, int thread) {
    const vit__mm *p = (const vit__mm *)ctx;
    vit__mm rows = *p;
    (void)thread;
    rows.y = p->y + (size_t)m0 * p->ldy;
    rows.x = p->x + (size_t)m0 * p->ldx;
    rows.M = m1 - m0;
    vit__matmul_ref(&rows);
    if (p->e) vit__epi_tile(p->y, p->ldy, p->e, m0, 0, m1 - m0, p->N);
}
#endif

/* The one entry: the few-rows product where VIT__FEW_USE says it wins,
   dot products below 4 rows, the packed tiles otherwise; under
   VIT_NO_SIMD the specification, row by row. */
static void vit__matmul(const vit__mm *p) {
    int m, n;
    if (p->K <= 0) { /* an empty sum: just the bias */
        for (m = 0; m < p->M; m++)
            for (n = 0; n < p->N; n++) p->y[(size_t)m * p->ldy + n] = p->b ? p->b[n] : 0.0f;
        if (p->e) vit__epi_tile(p->y, p->ldy, p->e, 0, 0, p->M, p->N);
        return;
    }
#ifndef VIT_NO_SIMD
    if (p->wt != VIT_DTYPE_F32) { /* x converted once (unless its caller did, or the tiles pack it), then the tiles */
        size_t row = vit__xs_row(p->wt, p->K);
        if (!p->xs_ld && !vit__xp_use(p)) {
            vit__parallel(p->M, p->threaded ? vit__par_threads((double)p->M * p->K) : 1, vit__xs_fill_rows, p);
            memset((unsigned char *)p->xs + (size_t)p->M * row, 0, (vit__xs_rows(p->M) - (size_t)p->M) * row);
        }
#if VIT__AMX
        if (vit__amx_use(p)) {
            vit__gemm_amx(p);
            return;
        }
#endif
        vit__gemm_tiles(p);
        return;
    }
    if (p->nn) { /* the few-rows and dot-product paths read rows of w: (N, K) only */
        vit__gemm_tiles(p);
        return;
    }
    if (p->ln && ((!p->blocked_rows && VIT__FEW_USE(p->M, p->K, p->N)) || p->M < VIT__FEW_MIN)) {
        /* the tiles normalise x as they pack it (vit__xp_fill); these paths read x's rows: LN(x) into the
           scratch first, row by row (one thread: these are a few rows) */
        vit__mm q = *p;
        VIT_ASSERT(p->xs);
        for (m = 0; m < p->M; m++)
            vit__layernorm_row((float *)p->xs + (size_t)m * p->K, p->x + (size_t)m * p->ldx, p->ln->w, p->ln->b, p->K,
                               p->ln->eps);
        q.x = (const float *)p->xs;
        q.ldx = p->K;
        q.ln = NULL;
        q.xs = NULL;
        vit__matmul(&q);
        return;
    }
    if (!p->blocked_rows && VIT__FEW_USE(p->M, p->K, p->N)) {
        vit__gemm_few(p);
        return;
    }
    if (p->M < VIT__FEW_MIN) {
        vit__parallel((p->N + 63) / 64, vit__mm_threads(p), vit__gemm_dots, p);
        return;
    }
    vit__gemm_tiles(p);
#else
    vit__parallel(p->M, vit__mm_threads(p), vit__matmul_rows, p);
#endif
}

VITDEF void vit_k_matmul(float *y, const float *x, const float *w, const float *b, int M, int K, int N) {
    vit__mm p = vit__mm_dense(y, x, w, b, M, K, N);
    vit__matmul(&p);
}

#ifdef VIT_NO_SIMD
#define VIT__XP 0
#define VIT__XP_KMAX 0
#define VIT__DOT_BF16 0
#define VIT__DOT_I8 0
#define VIT__ATT_Q7 0
#define VIT__BF16_WIDE 0
#endif

/* How a weight's bytes lie packed (vit__pack_weight): vit_tensor.pack,
   made by the loader in the model's arena. */
struct vit__pack {
    int32_t panel;        /* rows per packed panel: VIT__NR of the build that packed it */
    const int32_t *sums;  /* I8: each panel's column sums per k block (NR each); F32, BF16: NULL */
};

/* Rows per packed panel for a weight of K inputs in this build: VIT__NR
   for F32 wherever the SIMD tiles run, for BF16 there too (the vdpbf16ps
   tiles, else vit__tile_bfw) and for I8 where its dot-product tiles run,
   when a row is whole 4-byte groups (BF16: K even; I8: K % 4 == 0); else 0
   (it stays row-major). */
static int vit__panel_rows(int wt, int K) {
#ifndef VIT_NO_SIMD
    if (wt == VIT_DTYPE_F32) return VIT__NR;
#endif
#if VIT__DOT_BF16 || VIT__BF16_WIDE
    if (wt == VIT_DTYPE_BF16 && K % 2 == 0) return VIT__NR;
#endif
#if VIT__DOT_I8
    if (wt == VIT_DTYPE_I8 && K % 4 == 0) return VIT__NR;
#endif
    (void)wt;
    (void)K;
    return 0;
}

/* The bytes a weight's packing (vit__pack_weight) needs beside it: one
   panel's rows; 0 when w stays row-major (its type, K, fewer than a
   panel's rows, or q not 4-byte aligned). */
static size_t vit__pack_tmp(const vit_tensor *w) {
    const void *at = w->dtype == VIT_DTYPE_F32 ? (const void *)w->data : w->q;
    int rows = w->ndim == 2 && at && (uintptr_t)at % 4 == 0 ? vit__panel_rows(w->dtype, w->shape[1]) : 0;
    if (!rows || w->shape[0] < rows) return 0;
    return (size_t)rows * w->shape[1] * (size_t)vit__dtype_bytes(w->dtype);
}

/* The column sums a packed I8 weight keeps beside it (int32s): NR per
   panel and k block; 0 for BF16 and weights that stay row-major. */
static size_t vit__pack_sums(const vit_tensor *w) {
#if VIT__DOT_I8
    int kcb = vit__kc(VIT_DTYPE_I8);
    if (w->dtype == VIT_DTYPE_I8 && vit__pack_tmp(w))
        return (size_t)(w->shape[0] / VIT__NR) * (size_t)((w->shape[1] + kcb - 1) / kcb) * VIT__NR;
#endif
    (void)w;
    return 0;
}

/* Packs a weight (N, K) in place, once, as vit__gemm_block packs each of
   its blocks, so products read it as it lies: panel i (rows [NR i, NR i +
   NR), all but a last partial one) keeps exactly its rows' bytes, now
   group g (an F32 value, a BF16 pair, an I8 quad) of row NR i + j at
   group g NR + j, k blocks one after the other; I8 also gets each block's
   column sums (sums: vit__pack_sums(w) int32s). At batch 1 the weights
   stream from memory once per forward, and gathering NR rows per block
   stalled on the prefetches and cost the packing: BF16 and I8 ViT-B/16
   about 7% of the forward; F32 the transposes alone 6%, and a
   197 x 768 x 3072 product from memory runs 16% faster packed (147 against
   127 GFLOP/s, one thread). tmp: vit__pack_tmp(w) bytes; rec, the record
   w->pack then points at. */
static void vit__pack_weight(vit_tensor *w, unsigned char *tmp, int32_t *sums, struct vit__pack *rec) {
    size_t need = vit__pack_tmp(w), n0;
    unsigned char *q = (unsigned char *)(uintptr_t)w->q;
    const int32_t *first = sums;
    if (!need || w->pack) return;
#ifndef VIT_NO_SIMD
    if (w->dtype == VIT_DTYPE_F32) {
        int K = w->shape[1];
        for (n0 = 0; n0 + VIT__NR <= (size_t)w->shape[0]; n0 += VIT__NR) {
            float *panel = w->data + n0 * (size_t)K;
            memcpy(tmp, panel, need);
            vit__pack_panel(panel, (const float *)(const void *)tmp, K, 0, VIT__NR, 0, K);
        }
        rec->panel = VIT__NR;
        rec->sums = NULL;
        w->pack = rec;
        return;
    }
#endif
#if VIT__DOT_BF16 || VIT__DOT_I8 || VIT__BF16_WIDE
    for (n0 = 0; n0 + VIT__NR <= (size_t)w->shape[0]; n0 += VIT__NR) {
        uint32_t *panel = (uint32_t *)(void *)(q + n0 / VIT__NR * need);
        memcpy(tmp, panel, need);
        vit__pack_panel_u32(panel, tmp, need / VIT__NR, VIT__NR, (int)(need / VIT__NR));
#if VIT__DOT_I8
        if (w->dtype == VIT_DTYPE_I8) {
            int k0, K = w->shape[1], kcb = vit__kc(VIT_DTYPE_I8);
            for (k0 = 0; k0 < K; k0 += kcb, sums += VIT__NR)
                vit__panel_wsum(sums, panel + (size_t)k0 / 4 * VIT__NR, (K - k0 < kcb ? K - k0 : kcb) / 4);
        }
#endif
    }
    rec->panel = VIT__NR;
    rec->sums = w->dtype == VIT_DTYPE_I8 ? first : NULL;
    w->pack = rec;
#else
    (void)q; (void)n0; (void)tmp; (void)first; (void)rec;
#endif
}

/* 1 when an F32 product of x (M, K) by w (N, K) packs x, given scratch (vit__xp_use): rows of K <= VIT__XP_KMAX,
   and N >= 2 K, where the pack's pass over x is a small part of the product (the output projections, N = K, ran
   0-3% slower on one thread, 7-11% on two, twelve layers' products in turn: DINOv2-S/14 at 518 px and ViT-B/16) */
static int vit__xp_pays(int K, int N) { return VIT__XP && K <= VIT__XP_KMAX && N >= 2 * K; }
/* The same for a dense layer's F32 weight w (N, K) on rows of K: its scratch is taken (vit__dense_scratch) exactly
   where its LayerNorm can ride in the pack (vit__ln_fuses) */
static int vit__xp_pays_w(const vit_tensor *w, int K) {
    return w->dtype == VIT_DTYPE_F32 && w->ndim == 2 && vit__xp_pays(K, w->shape[0]);
}

/* Scratch bytes a product with weights of type wt needs for x (M, K) (F32: to pack x, which vit__dense_scratch
   asks for where vit__xp_pays). */
static size_t vit__mm_scratch(int wt, int M, int K) {
#ifdef VIT_NO_SIMD
    (void)wt; (void)M; (void)K;
    return 0;
#else
    if (M < 1 || K < 1) return 0;
    if (wt == VIT_DTYPE_F32) /* x packed (vit__xp_use): whole tiles */
        return VIT__XP && K <= VIT__XP_KMAX ? (size_t)(M + VIT__MR - 1) / VIT__MR * VIT__MR * K * sizeof(float) : 0;
#if VIT__XP && VIT__BF16_WIDE
    if (wt == VIT_DTYPE_BF16) /* packed too (vit__xp_use): whole tiles */
        return (size_t)(M + VIT__MR - 1) / VIT__MR * VIT__MR * K * sizeof(float);
#endif
    return vit__xs_rows(M) * vit__xs_row(wt, K) + (wt == VIT_DTYPE_I8 ? (size_t)M * 8 : 0);
#endif
}

/* The row stride, in floats, for activations of n floats a row that a product reads as its x. The F32 tiles
   broadcast from MR rows of x at once, and rows a multiple of 2 KiB apart share a few of L1's sets (its ways are 4
   KiB apart): the twelve rows of ViT-B/16's hidden features, 12 KiB apart, all met in one set of eight ways, and
   fc2 ran at 69% of the FMA peak where qkv and the projection ran at 87-88% (Zen 4, one thread). A cache line
   more a row spreads them: ViT-B/16 f32 0.364 -> 0.351 s (alternating runs, best of 4). */
#ifndef VIT__LD_X_PAD
#define VIT__LD_X_PAD 512 /* floats: rows a multiple of 2 KiB get a cache line more */
#endif
static int32_t vit__ld_x(int32_t n) { return n % VIT__LD_X_PAD == 0 ? n + 16 : n; }

/* A dense layer's product with its weight tensor w (F32, BF16 or I8): y
   (M, N) = x (M, K) w^T + b. xs: vit__dense_scratch's bytes, from the
   caller's arena. */
static vit__mm vit__mm_w(float *y, const float *x, const vit_tensor *w, const float *b, int M, int K, int N, void *xs) {
    vit__mm p = vit__mm_dense(y, x, w->data, b, M, K, N);
    p.wt = w->dtype;
    p.wq = w->dtype == VIT_DTYPE_F32 && w->pack ? (const void *)w->data : w->q;
    p.ws = w->scale;
    p.xmax = w->act_bits == 7 ? 127 : 255;
    p.panel = w->pack ? w->pack->panel : 0;
    p.wsums = w->pack ? w->pack->sums : NULL;
    VIT_ASSERT(!w->pack || (w->shape[0] == N && w->shape[1] == K)); /* packed: the whole matrix, as it lies */
    p.xs = xs;
    return p;
}

/* y (M, N) = x (M, K) w (K, N): a product whose w is laid out (K, N),
   row stride N (vit__mm.nn). */
static vit__mm vit__mm_nn(float *y, const float *x, const float *w, int M, int K, int N) {
    vit__mm p = vit__mm_dense(y, x, w, NULL, M, K, N);
    p.nn = 1;
    p.ldw = N;
    return p;
}

static void vit__dense(float *y, const float *x, const vit_tensor *w, const float *b, int M, int K, int N, void *xs) {
    vit__mm p = vit__mm_w(y, x, w, b, M, K, N, xs);
    vit__matmul(&p);
}

/* 1 when a product of w on rows of K can take a LayerNorm of its x (vit__mm.ln): it converts x (BF16, I8 with the
   SIMD kernels) or packs it (F32, vit__xp_pays), and a row fits VIT__LN_ROW_MAX. */
static int vit__ln_fuses(const vit_tensor *w, int K) {
#ifndef VIT_NO_SIMD
    return K <= VIT__LN_ROW_MAX && (w->dtype != VIT_DTYPE_F32 || vit__xp_pays_w(w, K));
#else
    (void)w; (void)K;
    return 0;
#endif
}

/* The larger of `have` and the scratch a product of w on M rows of K
   takes; then vit__scratch gets it from the arena (counted while counting). */
static size_t vit__dense_scratch(size_t have, const vit_tensor *w, int M, int K) {
    size_t n = w->dtype != VIT_DTYPE_F32 || vit__xp_pays_w(w, K) ? vit__mm_scratch(w->dtype, M, K) : 0;
    return n > have ? n : have;
}

static vit_result vit__scratch(vit_arena *a, size_t bytes, void **xs) {
    *xs = NULL;
    if (bytes && !(*xs = vit_arena_alloc(a, bytes))) return VIT_ERR_OOM;
    return VIT_OK;
}

/* ---- kernels: softmax ---- */
/* The row max is subtracted first, so exp never overflows and the largest
   term is exactly 1: the sum is >= 1 and the division is safe. */

VITDEF void vit_k_softmax_ref(float *y, const float *x, int rows, int n) {
    int r, i;
    for (r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * n;
        float *yr = y + (size_t)r * n, mx = xr[0], sum = 0.0f;
        for (i = 1; i < n; i++) mx = xr[i] > mx ? xr[i] : mx;
        for (i = 0; i < n; i++) { yr[i] = expf(xr[i] - mx); sum += yr[i]; }
        for (i = 0; i < n; i++) yr[i] /= sum;
    }
}

#ifndef VIT_NO_SIMD
/* The first n <= VIT__VW floats at p, the other lanes `fill`; and the
   matching store. Loops over a short or ragged dimension use them for the
   last vector, so the tail goes through the very same arithmetic. Forced
   inline: an out-of-line copy returning a vector would change the ABI
   without native AVX (GCC's -Wpsabi under SIMDE_NO_NATIVE). */
static VIT__INLINE vit__vf vit__v_load_part(const float *p, int n, float fill) {
#if VIT__VW == 16 /* native AVX-512: a masked load, which never touches the lanes past n */
    return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), (__mmask16)((1u << n) - 1u), p);
#else
    float t[VIT__VW];
    int j;
    if (n == VIT__VW) return vit__v_load(p);
    for (j = 0; j < VIT__VW; j++) t[j] = j < n ? p[j] : fill;
    return vit__v_load(t);
#endif
}
static VIT__INLINE void vit__v_store_part(float *p, vit__vf v, int n) {
#if VIT__VW == 16
    _mm512_mask_storeu_ps(p, (__mmask16)((1u << n) - 1u), v);
#else
    float t[VIT__VW];
    int j;
    if (n == VIT__VW) { vit__v_store(p, v); return; }
    vit__v_store(t, v);
    for (j = 0; j < n; j++) p[j] = t[j];
#endif
}

/* One row's exponentials, x minus its max, into y; returns their sum.
   vit__v_exp is within ~2 ulp of expf, the sum differs from the reference
   by rounding order only. */
static float vit__softmax_exp(float *y, const float *x, int n) {
    int i, rem;
    vit__vf vmx = vit__v_load_part(x, n < VIT__VW ? n : VIT__VW, x[0]), m1 = vmx, m2 = vmx, m3 = vmx, vsum, e;
    /* the max in four chains: one vmaxps after another waits out its latency (perf put a quarter of the
       softmax's samples there at 1,370 keys; with exp's cheaper n below, 7.0 -> 6.5 ns a vector); a max is
       exact in any order */
    for (i = VIT__VW; i + 4 * VIT__VW <= n; i += 4 * VIT__VW) {
        vmx = vit__v_max(vmx, vit__v_load(x + i));
        m1 = vit__v_max(m1, vit__v_load(x + i + VIT__VW));
        m2 = vit__v_max(m2, vit__v_load(x + i + 2 * VIT__VW));
        m3 = vit__v_max(m3, vit__v_load(x + i + 3 * VIT__VW));
    }
    for (; i + VIT__VW <= n; i += VIT__VW) vmx = vit__v_max(vmx, vit__v_load(x + i));
    if (i < n) vmx = vit__v_max(vmx, vit__v_load_part(x + i, n - i, x[0]));
    vmx = vit__v_set1(vit__v_hmax(vit__v_max(vit__v_max(vmx, m1), vit__v_max(m2, m3))));
    vsum = vit__v_zero();
    for (i = 0; i + VIT__VW <= n; i += VIT__VW) {
        e = vit__v_exp(vit__v_sub(vit__v_load(x + i), vmx));
        vit__v_store(y + i, e);
        vsum = vit__v_add(vsum, e);
    }
    /* The tail through the same vector exp, so every element of a row sees the same approximation (a masked
       load and store under AVX-512: a scalar tail cost as much as the row's whole vectors at 197 keys). */
    if ((rem = n - i) > 0) {
        e = vit__v_sub(vit__v_load_part(x + i, rem, 0.0f), vmx);
        vit__v_store_part(y + i, vit__v_exp(e), rem);
        vsum = vit__v_add(vsum, vit__v_load_part(y + i, rem, 0.0f));
    }
    return vit__v_hsum(vsum);
}

/* One row. */
static void vit__softmax_row(float *y, const float *x, int n) {
    float inv = 1.0f / vit__softmax_exp(y, x, n);
    int i;
    for (i = 0; i + VIT__VW <= n; i += VIT__VW) vit__v_store(y + i, vit__v_mul(vit__v_load(y + i), vit__v_set1(inv)));
    for (; i < n; i++) y[i] *= inv;
}

/* Rows shorter than a vector (outlook attention's K*K = 9 per row) would
   each pay a padded vector exp and its scalar set-up. Here they go in two
   steps over a block of rows: vit__softmax_shift writes scale * x minus
   its row's max, then vit__softmax_finish runs one vector exp over the
   block's contiguous values and divides each row by its sum. Each value
   sees the same subtraction and vector exp as in vit__softmax_row on scale
   * x; only the order of the row sums differs (rounding). */
static void vit__softmax_shift(float *y, const float *x, int rows, int n, float scale) {
    int r, i;
    for (r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * n;
        float *yr = y + (size_t)r * n, mx = scale * xr[0];
        for (i = 1; i < n; i++) mx = scale * xr[i] > mx ? scale * xr[i] : mx;
        for (i = 0; i < n; i++) yr[i] = scale * xr[i] - mx;
    }
}
static void vit__softmax_finish(float *y, int rows, int n) {
    size_t i, total = (size_t)rows * n;
    int r, j;
    for (i = 0; i < total; i += VIT__VW) {
        int m = total - i < VIT__VW ? (int)(total - i) : VIT__VW;
        vit__v_store_part(y + i, vit__v_exp(vit__v_load_part(y + i, m, 0.0f)), m);
    }
    for (r = 0; r < rows; r++) {
        float *yr = y + (size_t)r * n, sum = 0.0f, inv;
        for (j = 0; j < n; j++) sum += yr[j];
        inv = 1.0f / sum;
        for (j = 0; j < n; j++) yr[j] *= inv;
    }
}
static void vit__softmax_short(float *y, const float *x, int rows, int n, float scale) {
    vit__softmax_shift(y, x, rows, n, scale);
    vit__softmax_finish(y, rows, n);
}

/* softmax(scale * x) row by row, either way. */
static void vit__softmax_rows(float *y, const float *x, int rows, int n, float scale) {
    int r, i;
    if (n < VIT__VW) {
        vit__softmax_short(y, x, rows, n, scale);
        return;
    }
    if (scale != 1.0f)
        for (i = 0; i < rows * n; i++) y[i] = scale * x[i];
    for (r = 0; r < rows; r++) vit__softmax_row(y + (size_t)r * n, (scale != 1.0f ? y : x) + (size_t)r * n, n);
}

/* Row-wise kernels' tasks: y and x (rows, n); w, b and eps for layernorm. */
typedef struct vit__rows_ctx {
    float *y;
    const float *x, *w, *b;
    int n;
    float eps;
    int ldy, ldx; /* vit__layernorm_ld: floats between rows */
} vit__rows_ctx;

/* Rows [r0, r1), short ones a block at a time. */
static void vit__softmax_task(const void *ctx, int r0, int r1, int thread) {
    const vit__rows_ctx *c = (const vit__rows_ctx *)ctx;
    size_t n = (size_t)c->n;
    int r;
    (void)thread;
    if (c->n < VIT__VW) vit__softmax_short(c->y + r0 * n, c->x + r0 * n, r1 - r0, c->n, 1.0f);
    else
        for (r = r0; r < r1; r++) vit__softmax_row(c->y + r * n, c->x + r * n, c->n);
}

VITDEF void vit_k_softmax(float *y, const float *x, int rows, int n) {
    vit__rows_ctx c;
    c.y = y; c.x = x; c.w = c.b = NULL; c.n = n; c.eps = 0.0f;
    vit__parallel(rows, vit__par_threads((double)rows * n), vit__softmax_task, &c);
}
#else
VITDEF void vit_k_softmax(float *y, const float *x, int rows, int n) { vit_k_softmax_ref(y, x, rows, n); }
#endif

/* ---- kernels: layernorm ---- */
/* Two passes (mean, then the mean of squared deviations) rather than
   E[x^2] - E[x]^2, which cancels badly when |mean| >> std. Biased
   variance, as torch.nn.LayerNorm. */

/* A row's mean (into *mean) and 1 / sqrt(biased variance + eps), left to right. */
static float vit__row_rstd_ref(const float *x, int C, float eps, float *mean) {
    int i;
    float m = 0.0f, var = 0.0f;
    for (i = 0; i < C; i++) m += x[i];
    m /= (float)C;
    for (i = 0; i < C; i++) var += (x[i] - m) * (x[i] - m);
    var /= (float)C;
    *mean = m;
    return 1.0f / sqrtf(var + eps);
}

VITDEF void vit_k_layernorm_ref(float *y, const float *x, const float *w, const float *b, int rows, int C, float eps) {
    int r, i;
    for (r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * C;
        float *yr = y + (size_t)r * C, mean, rstd = vit__row_rstd_ref(xr, C, eps, &mean);
        for (i = 0; i < C; i++) yr[i] = (xr[i] - mean) * rstd * w[i] + b[i];
    }
}

#ifndef VIT_NO_SIMD
/* A row's mean (into *mean) and 1 / sqrt(variance + eps): vit__rows_rstd's, one row. */
static float vit__row_rstd(const float *x, int C, float eps, float *mean) {
    float rstd;
    vit__rows_rstd(&x, 1, C, eps, mean, &rstd);
    return rstd;
}

static void vit__layernorm_row(float *y, const float *x, const float *w, const float *b, int C, float eps) {
    int i;
    float mean, rstd = vit__row_rstd(x, C, eps, &mean);
    vit__vf vm = vit__v_set1(mean), vr = vit__v_set1(rstd);
    for (i = 0; i + VIT__VW <= C; i += VIT__VW)
        vit__v_store(y + i, vit__ln_v(vit__v_load(x + i), vm, vr, vit__v_load(w + i), vit__v_load(b + i)));
    for (; i < C; i++) y[i] = vit__ln_s(x[i], mean, rstd, w[i], b[i]);
}

static void vit__layernorm_task(const void *ctx, int r0, int r1, int thread) {
    const vit__rows_ctx *c = (const vit__rows_ctx *)ctx;
    int r;
    (void)thread;
    for (r = r0; r < r1; r++)
        vit__layernorm_row(c->y + (size_t)r * c->ldy, c->x + (size_t)r * c->ldx, c->w, c->b, c->n, c->eps);
}
#endif

/* vit_k_layernorm on rows of x ldx floats apart into rows of y ldy apart (vit__ld_x's strides). */
static void vit__layernorm_ld(float *y, int ldy, const float *x, int ldx, const float *w, const float *b, int rows,
                              int C, float eps) {
#ifndef VIT_NO_SIMD
    vit__rows_ctx c;
    c.y = y; c.x = x; c.w = w; c.b = b; c.n = C; c.eps = eps; c.ldy = ldy; c.ldx = ldx;
    vit__parallel(rows, vit__par_threads((double)rows * C), vit__layernorm_task, &c);
#else
    int r;
    for (r = 0; r < rows; r++) vit_k_layernorm_ref(y + (size_t)r * ldy, x + (size_t)r * ldx, w, b, 1, C, eps);
#endif
}

VITDEF void vit_k_layernorm(float *y, const float *x, const float *w, const float *b, int rows, int C, float eps) {
    vit__layernorm_ld(y, C, x, C, w, b, rows, C, eps);
}

/* ---- kernels: activations and add ---- */
/* GELU is the exact form x/2 (1 + erf(x/sqrt2)) of torch.nn.GELU(). The fast
   path writes 1 + erf(z) = erfc(|z|) for z < 0 and 2 - erfc(|z|) otherwise,
   with Abramowitz & Stegun 7.1.26 for erfc (absolute error <= 1.5e-7), so
   the negative tail keeps its small values instead of cancelling:
   |fast - ref| <= 1.5e-7 * |x| / 2 + rounding. */

VITDEF void vit_k_gelu_ref(float *y, const float *x, int n) {
    int i;
    for (i = 0; i < n; i++) y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
}
VITDEF void vit_k_relu_ref(float *y, const float *x, int n) {
    int i;
    for (i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
VITDEF void vit_k_sigmoid_ref(float *y, const float *x, int n) {
    int i;
    for (i = 0; i < n; i++) y[i] = 1.0f / (1.0f + expf(-x[i]));
}
VITDEF void vit_k_tanh_ref(float *y, const float *x, int n) {
    int i;
    for (i = 0; i < n; i++) y[i] = tanhf(x[i]);
}
VITDEF void vit_k_add_ref(float *y, const float *a, const float *b, int n) {
    int i;
    for (i = 0; i < n; i++) y[i] = a[i] + b[i];
}

static float vit__act1(float v, int act) {
    switch (act) {
    case VIT_ACT_GELU: return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    case VIT_ACT_RELU: return v > 0.0f ? v : 0.0f;
    case VIT_ACT_GELU_TANH: return 0.5f * v * (1.0f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)));
    case VIT_ACT_QUICK_GELU: return v / (1.0f + expf(-1.702f * v));
    case VIT_ACT_SILU: return v / (1.0f + expf(-v));
    default: return v;
    }
}

VITDEF void vit_k_act_ref(float *y, const float *x, int n, vit_act act) {
    int i;
    for (i = 0; i < n; i++) y[i] = vit__act1(x[i], act);
}

VITDEF void vit_k_glu_ref(float *y, const float *x, int rows, int H, vit_act act) {
    int r, j;
    for (r = 0; r < rows; r++)
        for (j = 0; j < H; j++)
            y[(size_t)r * H + j] = vit__act1(x[(size_t)r * 2 * H + j], act) * x[(size_t)r * 2 * H + H + j];
}

#ifndef VIT_NO_SIMD
/* 1 / a from the reciprocal estimate and one Newton step (error squared: ~1 ulp), a division's throughput
   being a sixteenth of an FMA's for 16 lanes: GELU's erfc spent half its time in it. */
static VIT__INLINE vit__vf vit__v_recip(vit__vf a) {
    vit__vf r = vit__v_rcp(a);
    return vit__v_fma(r, vit__v_fma(vit__v_sub(vit__v_zero(), a), r, vit__v_set1(1.0f)), r);
}

/* x Phi(x) = x/2 + |x|/2 erf(|x|/sqrt2), erf(z) = z P(z^2) / Q(z^2) on z <= 3.92 (past it erf is 1 in
   floats): a rational fit of our own (tools/fit_erf.py: degrees 5 and 5, weighted least squares to near
   minimax), within 3.8e-7 of erf in float arithmetic, so |fast - erff's GELU| <= 4.7e-7 for |x| <= 3. Below
   x = -3.92 sqrt2 GELU is under 1e-7 and the sum would only cancel: 0. Half the operations of A&S 7.1.26's
   erfc, which needed an exp and a division. */
#if VIT__VW != 16
static VIT__INLINE vit__vf vit__v_gelu_in(vit__vf x) {
    vit__vf a = vit__v_abs(x), z = vit__v_min(vit__v_mul(a, vit__v_set1(0.70710678118654752f)), vit__v_set1(3.92f));
    vit__vf s = vit__v_mul(z, z), p = vit__v_set1(2.03455488e-06f), q = vit__v_set1(3.80691999e-05f), h;
    p = vit__v_fma(p, s, vit__v_set1(0.000287487812f));
    p = vit__v_fma(p, s, vit__v_set1(0.00386894238f));
    p = vit__v_fma(p, s, vit__v_set1(0.0530623943f));
    p = vit__v_fma(p, s, vit__v_set1(0.192779124f));
    p = vit__v_fma(p, s, vit__v_set1(1.12837899f));
    q = vit__v_fma(q, s, vit__v_set1(0.00118825352f));
    q = vit__v_fma(q, s, vit__v_set1(0.0151735442f));
    q = vit__v_fma(q, s, vit__v_set1(0.115090773f));
    q = vit__v_fma(q, s, vit__v_set1(0.504177749f));
    q = vit__v_fma(q, s, vit__v_set1(1.0f));
    h = vit__v_mul(vit__v_set1(0.5f), x);
    h = vit__v_fma(vit__v_mul(vit__v_mul(vit__v_set1(0.5f), a), vit__v_mul(z, p)), vit__v_recip(q), h);
    return vit__v_select_ge0(vit__v_add(x, vit__v_set1(5.5437171f)), h, vit__v_zero());
}
#else
/* AVX-512: x/2 + |x| E(|x|), E(a) = erf(a / sqrt2) / 2 a cubic on each of 32 intervals of 3/16 up to 6 (past
   5.8125 the constant 1/2: GELU is x there, and 0 below -5.8125), its coefficients looked up by the interval
   with one vpermi2ps each (tools/fit_gelu.py fits and checks them: |fast - erff's GELU| <= 2.7e-7 max(1, |x|),
   3.1e-7 for |x| <= 3). 16 operations, 6 of them on the FMA pipes, where the rational above takes 27 and 20:
   5.9 cycles a vector here against 10.9 (16 pieces of degree 5 by vpermps: 1.4x); ViT-B/16 I8, one thread,
   alternating pairs: B = 1 0.992x (twelve), B = 8 0.995x (ten). x is raised to -6 first (max keeps a NaN): -inf
   gives 0. */
static const float vit__gelu_tab[4][32] = {
    {-4.51339375e-08f, 0.0743655637f, 0.146169573f, 0.213112086f, 0.273372442f, 0.325749099f, 0.369705349f,
     0.405324161f, 0.43319276f, 0.454246372f, 0.469603688f, 0.480419964f, 0.487775594f, 0.492605448f, 0.495667607f,
     0.497542143f, 0.498650134f, 0.499282479f, 0.499630928f, 0.499816328f, 0.499911577f, 0.499958843f, 0.499981463f,
     0.499991924f, 0.499996603f, 0.499998629f, 0.499999464f, 0.499999791f, 0.499999911f, 0.49999997f, 0.5f, 0.5f},
    {0.0748029724f, 0.0735022202f, 0.0697287396f, 0.0638633668f, 0.0564702265f, 0.0482074395f, 0.0397314653f,
     0.0316140614f, 0.0242856909f, 0.018011272f, 0.0128961951f, 0.00891458988f, 0.00594926346f, 0.00383306877f,
     0.00238424656f, 0.0014317804f, 0.000830083969f, 0.000464609009f, 0.000251057325f, 0.000130971748f,
     6.59631623e-05f, 3.20733488e-05f, 1.5055869e-05f, 6.82316613e-06f, 2.98527584e-06f, 1.26095995e-06f,
     5.14204999e-07f, 2.02436766e-07f, 7.69414683e-08f, 2.82325168e-08f, 1.00013029e-08f, 0.0f},
    {-5.59192813e-06f, -0.00131087517f, -0.00248024706f, -0.00340196304f, -0.00400498137f, -0.00426720968f,
     -0.00421340391f, -0.00390438363f, -0.00342120021f, -0.00284856092f, -0.00226119999f, -0.0017153417f,
     -0.0012457266f, -0.000867231051f, -0.000579345913f, -0.000371697795f, -0.000229181693f, -0.000135876529f,
     -7.74960936e-05f, -4.25354265e-05f, -2.24748601e-05f, -1.14350405e-05f, -5.60371245e-06f, -2.64545702e-06f,
     -1.20334562e-06f, -5.27489078e-07f, -2.22859256e-07f, -9.07603024e-08f, -3.56334056e-08f, -1.34883313e-08f,
     -4.92308327e-09f, 0.0f},
    {-0.00043168891f, -0.000387267733f, -0.000305958209f, -0.000201053248f, -8.86035268e-05f, 1.59662013e-05f,
     0.000100714475f, 0.000158865136f, 0.000189084763f, 0.000194551627f, 0.000181288138f, 0.000156358175f,
     0.0001263288f, 9.63210841e-05f, 6.96465795e-05f, 4.79205301e-05f, 3.14534809e-05f, 1.97313529e-05f,
     1.18472572e-05f, 6.81634901e-06f, 3.76151343e-06f, 1.99242118e-06f, 1.01363707e-06f, 4.95561949e-07f,
     2.32929352e-07f, 1.05300359e-07f, 4.57994993e-08f, 1.91709617e-08f, 7.72486253e-09f, 2.99709035e-09f,
     1.11984411e-09f, 0.0f},
};
static VIT__INLINE vit__vf vit__v_gelu_in(vit__vf x) {
    vit__vf xc = simde_mm512_max_ps(vit__v_set1(-6.0f), x), a = vit__v_abs(xc), s, f, e;
    simde__m512i i;
    s = vit__v_mul(vit__v_min(a, vit__v_set1(5.99999952f)), vit__v_set1(16.0f / 3.0f));
    f = vit__v_floor(s);
    i = _mm512_cvttps_epi32(f);
    s = vit__v_sub(s, f);
#define VIT__GELU_C(k) _mm512_permutex2var_ps(vit__v_load(vit__gelu_tab[k]), i, vit__v_load(vit__gelu_tab[k] + 16))
    e = vit__v_fma(VIT__GELU_C(3), s, VIT__GELU_C(2));
    e = vit__v_fma(e, s, VIT__GELU_C(1));
    e = vit__v_fma(e, s, VIT__GELU_C(0));
#undef VIT__GELU_C
    return vit__v_fma(a, e, vit__v_mul(vit__v_set1(0.5f), xc));
}
#endif
static vit__vf vit__v_gelu(vit__vf x) { return vit__v_gelu_in(x); }
/* 1 / (1 + e^-x); e^-x saturates at the clamp of vit__v_exp, giving 0 or 1. */
static vit__vf vit__v_sigmoid(vit__vf x) {
    vit__vf e = vit__v_exp(vit__v_sub(vit__v_zero(), x));
    return vit__v_div(vit__v_set1(1.0f), vit__v_add(vit__v_set1(1.0f), e));
}
/* tanh|x| = 1 - 2 / (e^{2|x|} + 1), sign restored; absolute error ~1e-7. */
static vit__vf vit__v_tanh(vit__vf x) {
    vit__vf e = vit__v_exp(vit__v_mul(vit__v_set1(2.0f), vit__v_abs(x)));
    vit__vf t = vit__v_sub(vit__v_set1(1.0f), vit__v_div(vit__v_set1(2.0f), vit__v_add(e, vit__v_set1(1.0f))));
    return vit__v_select_ge0(x, t, vit__v_sub(vit__v_zero(), t));
}
static vit__vf vit__v_relu(vit__vf x) { return vit__v_max(x, vit__v_zero()); }
/* x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
static vit__vf vit__v_gelu_tanh(vit__vf x) {
    vit__vf u = vit__v_mul(vit__v_set1(0.79788456080286536f),
                           vit__v_fma(vit__v_mul(vit__v_set1(0.044715f), x), vit__v_mul(x, x), x));
    return vit__v_mul(vit__v_mul(vit__v_set1(0.5f), x), vit__v_add(vit__v_set1(1.0f), vit__v_tanh(u)));
}
static vit__vf vit__v_quick_gelu(vit__vf x) {
    return vit__v_mul(x, vit__v_sigmoid(vit__v_mul(vit__v_set1(1.702f), x)));
}
static vit__vf vit__v_silu(vit__vf x) { return vit__v_mul(x, vit__v_sigmoid(x)); }
static vit__vf vit__v_act(vit__vf x, int act) {
    switch (act) {
    case VIT_ACT_GELU: return vit__v_gelu(x);
    case VIT_ACT_RELU: return vit__v_relu(x);
    case VIT_ACT_GELU_TANH: return vit__v_gelu_tanh(x);
    case VIT_ACT_QUICK_GELU: return vit__v_quick_gelu(x);
    case VIT_ACT_SILU: return vit__v_silu(x);
    default: return x;
    }
}
/* vit__v_act where act is a constant after inlining (its caller switched on it outside a loop): GELU's and ReLU's
   code inlined, the others a call */
static VIT__INLINE vit__vf vit__v_act_c(vit__vf x, const int act) {
    switch (act) {
    case VIT__EPI_NONE: return x;
    case VIT_ACT_GELU: return vit__v_gelu_in(x);
    case VIT_ACT_RELU: return vit__v_relu(x);
    default: return vit__v_act(x, act);
    }
}
/* One vector through the epilogue, act(v) * g + r (g and r: that vector's, or NULL), each operation one rounding as
   vit_k_act, vit_k_mul and vit_k_add would give: vit__epi_tile's, vit__epi_bf16's and the AMX rows' */
static VIT__INLINE vit__vf vit__epi_v(vit__vf v, const int act, const float *g, const float *r) {
    v = vit__v_act_c(v, act);
    if (g) v = vit__v_mul(v, vit__v_load(g));
    return r ? vit__v_add(v, vit__v_load(r)) : v;
}

/* Whole vectors, then the tail padded into one vector so that every element
   goes through the same approximation. */
#define VIT__MAP(name, vfn)                                                      \
    VITDEF void name(float *y, const float *x, int n) {                          \
        int i;                                                                   \
        for (i = 0; i + VIT__VW <= n; i += VIT__VW) vit__v_store(y + i, vfn(vit__v_load(x + i))); \
        if (i < n) {                                                             \
            float t[VIT__VW] = {0};                                              \
            int j;                                                               \
            for (j = 0; j < n - i; j++) t[j] = x[i + j];                         \
            vit__v_store(t, vfn(vit__v_load(t)));                                \
            for (j = 0; j < n - i; j++) y[i + j] = t[j];                         \
        }                                                                        \
    }
VIT__MAP(vit_k_gelu, vit__v_gelu)
VIT__MAP(vit_k_sigmoid, vit__v_sigmoid)
VIT__MAP(vit_k_tanh, vit__v_tanh)
VIT__MAP(vit_k_relu, vit__v_relu)

VITDEF void vit_k_act(float *y, const float *x, int n, vit_act act) {
    int i, j;
    for (i = 0; i + VIT__VW <= n; i += VIT__VW) vit__v_store(y + i, vit__v_act(vit__v_load(x + i), act));
    if (i < n) {
        float t[VIT__VW] = {0};
        for (j = 0; j < n - i; j++) t[j] = x[i + j];
        vit__v_store(t, vit__v_act(vit__v_load(t), act));
        for (j = 0; j < n - i; j++) y[i + j] = t[j];
    }
}

VITDEF void vit_k_glu(float *y, const float *x, int rows, int H, vit_act act) {
    int r, j, u;
    for (r = 0; r < rows; r++) {
        const float *a = x + (size_t)r * 2 * H, *b = a + H;
        float *yr = y + (size_t)r * H;
        for (j = 0; j + VIT__VW <= H; j += VIT__VW)
            vit__v_store(yr + j, vit__v_mul(vit__v_act(vit__v_load(a + j), act), vit__v_load(b + j)));
        if (j < H) {
            float t[VIT__VW] = {0};
            for (u = 0; u < H - j; u++) t[u] = a[j + u];
            vit__v_store(t, vit__v_act(vit__v_load(t), act));
            for (u = 0; u < H - j; u++) yr[j + u] = t[u] * b[j + u];
        }
    }
}

/* The GEMM's epilogue on rows [m0, m0 + rows) x columns [n0, n0 + n) of y,
   y = act(y) * g + r: whole vectors, then the tail through one padded
   vector, as vit_k_act does, so every element meets the same
   approximation; the scale and the add are one rounding each, as the
   separate vit_k_mul and vit_k_add passes would be. */
static VIT__INLINE void vit__epi_tile_c(float *y, int ldy, const vit__epi *e, int m0, int n0, int rows, int n,
                                        const int act) {
    int i, j, u;
    for (i = 0; i < rows; i++) {
        float *yi = y + (size_t)(m0 + i) * ldy + n0;
        const float *ri = vit__epi_r(e, m0 + i, n0);
        const float *gi = e->g ? e->g + n0 : NULL;
        if (act == VIT__EPI_NONE && !gi && !ri) continue;
        for (j = 0; j + VIT__VW <= n; j += VIT__VW)
            vit__v_store(yi + j, vit__epi_v(vit__v_load(yi + j), act, gi ? gi + j : NULL, ri ? ri + j : NULL));
        if (j < n) {
            float t[VIT__VW] = {0};
            for (u = 0; u < n - j; u++) t[u] = yi[j + u];
            vit__v_store(t, vit__v_act(vit__v_load(t), act));
            for (u = 0; u < n - j; u++) {
                float v = gi ? t[u] * gi[j + u] : t[u];
                yi[j + u] = ri ? v + ri[j + u] : v;
            }
        }
    }
}
/* act a constant in the loop (vit__v_act_c), as vit__epi_bf16 */
static void vit__epi_tile(float *y, int ldy, const vit__epi *e, int m0, int n0, int rows, int n) {
    switch (e->act) {
    case VIT__EPI_NONE: vit__epi_tile_c(y, ldy, e, m0, n0, rows, n, VIT__EPI_NONE); return;
    case VIT_ACT_GELU: vit__epi_tile_c(y, ldy, e, m0, n0, rows, n, VIT_ACT_GELU); return;
    default: vit__epi_tile_c(y, ldy, e, m0, n0, rows, n, e->act); return;
    }
}

VITDEF void vit_k_add(float *y, const float *a, const float *b, int n) {
    int i;
    for (i = 0; i + VIT__VW <= n; i += VIT__VW) vit__v_store(y + i, vit__v_add(vit__v_load(a + i), vit__v_load(b + i)));
    for (; i < n; i++) y[i] = a[i] + b[i];
}
#else
VITDEF void vit_k_gelu(float *y, const float *x, int n) { vit_k_gelu_ref(y, x, n); }
VITDEF void vit_k_relu(float *y, const float *x, int n) { vit_k_relu_ref(y, x, n); }
VITDEF void vit_k_sigmoid(float *y, const float *x, int n) { vit_k_sigmoid_ref(y, x, n); }
VITDEF void vit_k_tanh(float *y, const float *x, int n) { vit_k_tanh_ref(y, x, n); }
VITDEF void vit_k_act(float *y, const float *x, int n, vit_act act) { vit_k_act_ref(y, x, n, act); }
VITDEF void vit_k_glu(float *y, const float *x, int rows, int H, vit_act act) { vit_k_glu_ref(y, x, rows, H, act); }
VITDEF void vit_k_add(float *y, const float *a, const float *b, int n) { vit_k_add_ref(y, a, b, n); }

static void vit__epi_tile(float *y, int ldy, const vit__epi *e, int m0, int n0, int rows, int n) {
    int i, j;
    for (i = 0; i < rows; i++) {
        float *yi = y + (size_t)(m0 + i) * ldy + n0;
        const float *ri = vit__epi_r(e, m0 + i, n0);
        for (j = 0; j < n; j++) {
            float v = vit__act1(yi[j], e->act);
            if (e->g) v *= e->g[n0 + j];
            yi[j] = ri ? v + ri[j] : v;
        }
    }
}
#endif

/* ---- kernels: finiteness of an input ---- */
/* vit_model_forward refuses NaN and Inf inputs. x * 0 is 0 for a finite x
   and NaN for NaN or +-Inf, and a NaN stays NaN through the sum, so the
   check is one multiply-add per value with no branch per value (a scalar
   isfinite loop cost as much as a whole SE or SGE forward pass); the
   caller looks for the culprit only when it fails. */
static int vit__all_finite_ref(const float *x, size_t n) {
    size_t i;
    for (i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

#ifndef VIT_NO_SIMD
static int vit__all_finite(const float *x, size_t n) {
    /* four independent chains: one would wait on the FMA latency */
    vit__vf a0 = vit__v_zero(), a1 = vit__v_zero(), a2 = vit__v_zero(), a3 = vit__v_zero(), zero = vit__v_zero();
    size_t i;
    for (i = 0; i + 4 * VIT__VW <= n; i += 4 * VIT__VW) {
        a0 = vit__v_fma(vit__v_load(x + i), zero, a0);
        a1 = vit__v_fma(vit__v_load(x + i + VIT__VW), zero, a1);
        a2 = vit__v_fma(vit__v_load(x + i + 2 * VIT__VW), zero, a2);
        a3 = vit__v_fma(vit__v_load(x + i + 3 * VIT__VW), zero, a3);
    }
    for (; i + VIT__VW <= n; i += VIT__VW) a0 = vit__v_fma(vit__v_load(x + i), zero, a0);
    return vit__v_hsum(vit__v_add(vit__v_add(a0, a1), vit__v_add(a2, a3))) == 0.0f && vit__all_finite_ref(x + i, n - i);
}
#else
static int vit__all_finite(const float *x, size_t n) { return vit__all_finite_ref(x, n); }
#endif

/* ---- kernels: patch convolution ---- */

VITDEF void vit_k_patch_conv_ref(float *y, const float *x, const float *w, const float *b, const vit_patch_shape *sh) {
    int B = sh->B, Cin = sh->C, H = sh->H, W = sh->W, P = sh->P, D = sh->D;
    int GH = H / P, GW = W / P, bi, py, px, d, c, ky, kx;
    for (bi = 0; bi < B; bi++)
        for (py = 0; py < GH; py++)
            for (px = 0; px < GW; px++)
                for (d = 0; d < D; d++) {
                    float s = 0.0f;
                    for (c = 0; c < Cin; c++)
                        for (ky = 0; ky < P; ky++)
                            for (kx = 0; kx < P; kx++)
                                s += x[(((size_t)bi * Cin + c) * H + py * P + ky) * W + px * P + kx] *
                                     w[(((size_t)d * Cin + c) * P + ky) * P + kx];
                    y[(((size_t)bi * GH + py) * GW + px) * D + d] = s + (b ? b[d] : 0.0f);
                }
}

typedef struct vit__im2col {
    float *cols;
    const float *x;
    int Cin, H, W, P;
} vit__im2col;

/* Rows [r0, r1) of cols: row r is patch r % (GH GW) of image r / (GH GW). */
static void vit__im2col_rows(const void *ctx, int r0, int r1, int thread) {
    const vit__im2col *a = (const vit__im2col *)ctx;
    int Cin = a->Cin, H = a->H, W = a->W, P = a->P, GH = H / P, GW = W / P, K = Cin * P * P, row;
    (void)thread;
    for (row = r0; row < r1; row++) {
        int bi = row / (GH * GW), py = row / GW % GH, px = row % GW, c, ky;
        float *dst = a->cols + (size_t)row * K;
        for (c = 0; c < Cin; c++)
            for (ky = 0; ky < P; ky++)
                memcpy(dst + ((size_t)c * P + ky) * P,
                       a->x + (((size_t)bi * Cin + c) * H + py * P + ky) * W + (size_t)px * P,
                       (size_t)P * sizeof(float));
    }
}

/* im2col: each patch becomes one row of cols in the conv weight's (c, ky, kx) order. */
static void vit__patch_cols(float *cols, const float *x, const vit_patch_shape *sh) {
    int P = sh->P, rows = sh->B * (sh->H / P) * (sh->W / P);
    vit__im2col a;
    a.cols = cols; a.x = x; a.Cin = sh->C; a.H = sh->H; a.W = sh->W; a.P = P;
    vit__parallel(rows, vit__par_threads((double)rows * sh->C * P * P), vit__im2col_rows, &a);
}

/* im2col, then one GEMM against w viewed as (D, Cin*P*P). */
VITDEF void vit_k_patch_conv(float *y, float *cols, const float *x, const float *w, const float *b,
                             const vit_patch_shape *sh) {
    vit__patch_cols(cols, x, sh);
    vit_k_matmul(y, cols, w, b, sh->B * (sh->H / sh->P) * (sh->W / sh->P), sh->C * sh->P * sh->P, sh->D);
}

/* ---- kernels: attention ---- */

/* x, or x rounded to bf16 when lowp. */
static float vit__lowp(float x, int lowp) { return lowp ? vit__bf16_float(vit__bf16_round(x)) : x; }

/* A row's scale for vit__q8s: its max |x|, and whether it is finite. */
static float vit__q8s_row_ref(const float *x, int n, int qmax, float *inv) {
    float amax = 0.0f;
    int k, finite = 1;
    for (k = 0; k < n; k++) {
        finite &= isfinite(x[k]) != 0;
        amax = fabsf(x[k]) > amax ? fabsf(x[k]) : amax;
    }
    return vit__q8s_scale(amax, finite, qmax, inv);
}

/* lowp: the products take q, k, the probabilities and v rounded to bf16
   (the scores and the softmax stay f32), as the BF16 attention does; lowp
   2 (vit__att_mode): q kᵀ on q and k in int8 instead, each row of a head on
   its own scale (vit__q8s), the sums exact, a score (S (s_k scale)) s_q,
   and P V in int8 too: each row's e = exp(s - max) as round(255 e) (and
   the weight that rounding left out on a key of V's column means), v to
   bf16 then in int8 a column on its own scale; lowp 3: those scores with q's rows on 7
   bits (+-63), then the softmax and P V in f32, as lowp 0. */
static void vit__attention_ref(float *out, float *att, const float *q, const float *k, const float *v,
                               const vit_attn_shape *s, int lowp) {
    int B = s->B, N = s->N, NH = s->NH, HS = s->HS, ld = s->ld, bi, h, i, j, d, C = NH * HS;
    float scale = s->scale, post = s->post;
    for (bi = 0; bi < B; bi++)
        for (h = 0; h < NH; h++) {
            float *S = att + ((size_t)bi * NH + h) * N * N;
            const float *qb = q + (size_t)bi * N * ld + h * HS, *kb = k + (size_t)bi * N * ld + h * HS;
            const float *vb = v + (size_t)bi * N * ld + h * HS;
            for (i = 0; i < N; i++) {
                const float *qi = qb + (size_t)i * ld;
                int qmax = lowp == 3 ? 63 : 127;
                float iq = 0.0f, sq = lowp >= 2 ? vit__q8s_row_ref(qi, HS, qmax, &iq) : 0.0f;
                for (j = 0; j < N; j++) {
                    const float *kj = kb + (size_t)j * ld;
                    float s = 0.0f, ik, sk;
                    if (lowp >= 2) {
                        int32_t S8 = 0;
                        sk = vit__q8s_row_ref(kj, HS, 127, &ik);
                        for (d = 0; d < HS; d++) S8 += vit__q8s(qi[d], iq, qmax) * vit__q8s(kj[d], ik, 127);
                        S[(size_t)i * N + j] = (float)S8 * (sk * scale) * sq;
                        continue;
                    }
                    for (d = 0; d < HS; d++) s += vit__lowp(qi[d], lowp) * vit__lowp(kj[d], lowp);
                    S[(size_t)i * N + j] = scale * s;
                }
            }
            if (lowp == 2) {
                /* I8, as the fast path (vit__att_p8_rows, vit__att_v8_pack): each row's e = exp(s - max) <= 1 in
                   u8, round(255 e), and what that left out of 255 sum e on one more key whose v is V's column
                   means; v rounded to bf16, then a column of the head in int8 on its own scale; the sums exact,
                   times post / (255 sum e) and the column's scale; the maps softmax * post */
                for (i = 0; i < N; i++) {
                    float *Si = S + (size_t)i * N, mx = Si[0], sum = 0.0f, c, p8sum = 0.0f, rest;
                    for (j = 1; j < N; j++) mx = Si[j] > mx ? Si[j] : mx;
                    for (j = 0; j < N; j++) { Si[j] = expf(Si[j] - mx); sum += Si[j]; }
                    c = post / (255.0f * sum);
                    if (isfinite(sum))
                        for (j = 0; j < N; j++) p8sum += nearbyintf(255.0f * Si[j]);
                    rest = isfinite(sum) ? nearbyintf(255.0f * sum - p8sum) : 0.0f;
                    rest = rest > 255.0f ? 255.0f : rest > 0.0f ? rest : 0.0f;
                    for (d = 0; d < HS; d++) {
                        float amax = 0.0f, iv, sv;
                        int32_t acc = 0, vsum = 0;
                        int finite = 1;
                        for (j = 0; j < N; j++) {
                            float x = vit__lowp(vb[(size_t)j * ld + d], 1);
                            finite &= isfinite(x) != 0;
                            amax = fabsf(x) > amax ? fabsf(x) : amax;
                        }
                        sv = vit__q8s_scale(amax, finite, 127, &iv);
                        if (!isfinite(sum)) { /* a NaN score: no e to round */
                            out[((size_t)bi * N + i) * C + h * HS + d] = NAN;
                            continue;
                        }
                        for (j = 0; j < N; j++) {
                            int v8 = vit__q8s(vit__lowp(vb[(size_t)j * ld + d], 1), iv, 127);
                            acc += (int32_t)nearbyintf(255.0f * Si[j]) * v8;
                            vsum += v8;
                        }
                        acc += (int32_t)rest * (int32_t)nearbyintf((float)vsum / (float)N);
                        out[((size_t)bi * N + i) * C + h * HS + d] = (float)acc * (c * sv);
                    }
                    for (j = 0; j < N; j++) Si[j] = Si[j] / sum * post;
                }
                continue;
            }
            if (lowp == 1) {
                /* BF16, as the fast path: each row's exponentials e = exp(s - max), unnormalised, in bf16 into
                   the product, whose row is then scaled by post / sum e; the maps softmax * post */
                for (i = 0; i < N; i++) {
                    float *Si = S + (size_t)i * N, mx = Si[0], sum = 0.0f, c;
                    for (j = 1; j < N; j++) mx = Si[j] > mx ? Si[j] : mx;
                    for (j = 0; j < N; j++) { Si[j] = expf(Si[j] - mx); sum += Si[j]; }
                    c = post / sum;
                    for (d = 0; d < HS; d++) {
                        float s = 0.0f;
                        for (j = 0; j < N; j++) s += vit__lowp(Si[j], 1) * vit__lowp(vb[(size_t)j * ld + d], 1);
                        out[((size_t)bi * N + i) * C + h * HS + d] = s * c;
                    }
                    for (j = 0; j < N; j++) Si[j] = Si[j] / sum * post;
                }
                continue;
            }
            vit_k_softmax_ref(S, S, N, N);
            if (post != 1.0f)
                for (i = 0; i < N * N; i++) S[i] *= post;
            for (i = 0; i < N; i++)
                for (d = 0; d < HS; d++) {
                    float s = 0.0f;
                    for (j = 0; j < N; j++)
                        s += S[(size_t)i * N + j] * vb[(size_t)j * ld + d];
                    out[((size_t)bi * N + i) * C + h * HS + d] = s;
                }
        }
}

VITDEF void vit_k_attention_ref(float *out, float *att, const float *q, const float *k, const float *v,
                                const vit_attn_shape *s) {
    vit__attention_ref(out, att, q, k, v, s, 0);
}

VITDEF void vit_k_relpos_add_ref(float *s, const float *tab, const int32_t *idx, int rows, int n) {
    size_t i, total = (size_t)rows * (size_t)n;
    for (i = 0; i < total; i++) s[i] += tab[idx[i]];
}

#ifndef VIT_NO_SIMD
/* tab[idx[0]], ..., tab[idx[VIT__VW - 1]]: AVX2's vgatherdps (SIMDe
   elsewhere); AVX-512's own where native (SIMDe 0.7 has no 512-bit
   gather). */
static VIT__INLINE vit__vf vit__v_gather(const float *tab, const int32_t *idx) {
#if VIT__VW == 16
    return _mm512_i32gather_ps(_mm512_loadu_si512((const void *)idx), tab, 4);
#else
    return simde_mm256_i32gather_ps(tab, simde_mm256_loadu_si256((const void *)idx), 4);
#endif
}

/* The rows are contiguous, so the scores are one run of rows * n. */
VITDEF void vit_k_relpos_add(float *s, const float *tab, const int32_t *idx, int rows, int n) {
    size_t i, total = (size_t)rows * (size_t)n;
    for (i = 0; i + VIT__VW <= total; i += VIT__VW)
        vit__v_store(s + i, vit__v_add(vit__v_load(s + i), vit__v_gather(tab, idx + i)));
    for (; i < total; i++) s[i] += tab[idx[i]];
}
#else
VITDEF void vit_k_relpos_add(float *s, const float *tab, const int32_t *idx, int rows, int n) {
    vit_k_relpos_add_ref(s, tab, idx, rows, n);
}
#endif

VITDEF void vit_k_rope_ref(float *x, const float *cs, int rows, int NH, int HS, int ld) {
    int r, h, d;
    for (r = 0; r < rows; r++) {
        const float *C = cs + (size_t)r * 2 * HS, *S = C + HS;
        for (h = 0; h < NH; h++) {
            float *xh = x + (size_t)r * ld + (size_t)h * HS;
            for (d = 0; d + 1 < HS; d += 2) {
                float a = xh[d], b = xh[d + 1];
                xh[d] = a * C[d] + b * S[d];
                xh[d + 1] = b * C[d + 1] + a * S[d + 1];
            }
        }
    }
}

#ifndef VIT_NO_SIMD
/* (x1, x0, x3, x2, ...): each pair's two lanes swapped. SIMDe 0.7 has no
   512-bit permute_ps; VIT__VW is 16 only where AVX-512 is native. */
#if VIT__VW == 16
#define vit__v_swap_pairs(v) _mm512_permute_ps(v, 0xB1)
#else
#define vit__v_swap_pairs(v) simde_mm256_permute_ps(v, 0xB1)
#endif

/* The vectors never split a pair (VIT__VW is even); a tail of pairs is scalar. */
VITDEF void vit_k_rope(float *x, const float *cs, int rows, int NH, int HS, int ld) {
    int r, h, d;
    for (r = 0; r < rows; r++) {
        const float *C = cs + (size_t)r * 2 * HS, *S = C + HS;
        for (h = 0; h < NH; h++) {
            float *xh = x + (size_t)r * ld + (size_t)h * HS;
            for (d = 0; d + VIT__VW <= HS; d += VIT__VW) {
                vit__vf v = vit__v_load(xh + d);
                vit__v_store(xh + d, vit__v_fma(v, vit__v_load(C + d),
                                                vit__v_mul(vit__v_swap_pairs(v), vit__v_load(S + d))));
            }
            for (; d + 1 < HS; d += 2) {
                float a = xh[d], b = xh[d + 1];
                xh[d] = a * C[d] + b * S[d];
                xh[d + 1] = b * C[d + 1] + a * S[d + 1];
            }
        }
    }
}
#else
VITDEF void vit_k_rope(float *x, const float *cs, int rows, int NH, int HS, int ld) {
    vit_k_rope_ref(x, cs, rows, NH, HS, ld);
}
#endif

VITDEF void vit_k_rope_half_ref(float *x, const float *cs, int rows, int NH, int HS, int ld) {
    int r, h, d, H2 = HS / 2;
    for (r = 0; r < rows; r++) {
        const float *C = cs + (size_t)r * 2 * HS, *S = C + HS;
        for (h = 0; h < NH; h++) {
            float *xh = x + (size_t)r * ld + (size_t)h * HS;
            for (d = 0; d < H2; d++) {
                float a = xh[d], b = xh[d + H2];
                xh[d] = a * C[d] + b * S[d];
                xh[d + H2] = b * C[d + H2] + a * S[d + H2];
            }
        }
    }
}

#ifndef VIT_NO_SIMD
/* The two halves are two runs, so no lane moves: a vector of the first
   half and the same lanes of the second; a tail shorter than a vector is
   scalar. */
VITDEF void vit_k_rope_half(float *x, const float *cs, int rows, int NH, int HS, int ld) {
    int r, h, d, H2 = HS / 2;
    for (r = 0; r < rows; r++) {
        const float *C = cs + (size_t)r * 2 * HS, *S = C + HS;
        for (h = 0; h < NH; h++) {
            float *xh = x + (size_t)r * ld + (size_t)h * HS;
            for (d = 0; d + VIT__VW <= H2; d += VIT__VW) {
                vit__vf a = vit__v_load(xh + d), b = vit__v_load(xh + d + H2);
                vit__v_store(xh + d, vit__v_fma(a, vit__v_load(C + d), vit__v_mul(b, vit__v_load(S + d))));
                vit__v_store(xh + d + H2,
                             vit__v_fma(b, vit__v_load(C + d + H2), vit__v_mul(a, vit__v_load(S + d + H2))));
            }
            for (; d < H2; d++) {
                float a = xh[d], b = xh[d + H2];
                xh[d] = a * C[d] + b * S[d];
                xh[d + H2] = b * C[d + H2] + a * S[d + H2];
            }
        }
    }
}
#else
VITDEF void vit_k_rope_half(float *x, const float *cs, int rows, int NH, int HS, int ld) {
    vit_k_rope_half_ref(x, cs, rows, NH, HS, ld);
}
#endif

/* Fused per head: a task is one (batch, head, block of query rows), which
   takes q kᵀ for its rows on the GEMM's tiles (rows of Q and K are both
   "dot-product" operands), each block of scores straight to its
   exponentials (vit__att_exp_row), then P V. Unless maps are kept, a
   thread's probabilities live in one slot that it reuses, not in the
   B x NH x N x N of every head, and stay in cache between the two
   products: 1.0-1.4x faster than keeping them all (ViT-B/16, B = 8, Zen
   5). K and V are packed once a head (vit__head_pack) for all its blocks,
   so a block costs its q rows only, and a head's queries go in blocks
   whose probabilities stay in L2 once the head's pass 1 MiB. Every output
   is computed the same way whatever the blocks, thread or maps setting
   (each row's softmax and each GEMM row sum in a fixed order), so results
   are bit-identical across all of them. */

/* The attention's products for a model's dense layers' dtype (lowp: 0 F32, 1 BF16, 2 I8) on this build: 0, f32,
   without the BF16 dot product; 2, where vpdpbusd runs and no AMX tiles are built (their BF16 q kᵀ is the faster
   there), I8's q kᵀ in int8 (as OpenVINO's NNCF int8 quantises q and k) and, since 0.5.33, P V in int8 too (NNCF
   leaves the probabilities alone): each row's e = exp(s - max) <= 1 as u8, round(255 e), the weight that rounding
   leaves out of the row on one more key whose v is V's column means, and V in int8 a column of the head on its
   own scale (vit__att_p8_rows, vit__att_v8_pack). DINOv2-S/14 I8 at 518 px (1,370 keys), Zen 5, alternating
   passes: 1.09-1.12x faster on one thread (three runs, medians 0.144-0.146 -> 0.128-0.133 s), 1.09x at B = 8 on
   two; ViT-B/16's 197 keys 1.003-1.014x (B = 1 and 8, one thread), where attention is a tenth of a pass. The
   logits' relative L2 to f32 unchanged on ViT-B/16 (2.42e-2 -> 2.41e-2) and DINOv2-S/14 (2.24e-2 -> 2.23e-2); on
   the families' small random models (tests/run.sh) up to a quarter more (medians over perturbed inputs: BEiT v2
   0.033 -> 0.0365, EVA-02 CLIP 0.019 -> 0.024; BEiT SwiGLU's less). 3, where the int8 dot product runs but not
   the BF16 one (AVX2, AVX-512 VNNI before BF16, NEON with sdot): I8's q kᵀ in int8 with q's rows on 7 bits, so
   that AVX2's vpmaddubsw takes q + 64 (1..127) by k as they are (2 x 127 x 127 within int16: exact; three
   operations for 32 multiply-adds, as the dense layers' x on 7 bits), and P V in f32; else 1, both in BF16. Modes
   2 and 3 are lowp 2 to the callers that choose them. */
static int vit__att_mode(int lowp) {
#if !defined(VIT_NO_SIMD) && VIT__DOT_BF16 && VIT__DOT_I8 && !VIT__AMX_BUILD
    if (lowp >= 2) return 2;
#endif
#if VIT__ATT_Q7
    if (lowp >= 2) return 3;
#endif
    return lowp && VIT__DOT_BF16 ? 1 : 0;
}

/* Blocks of `per` query rows, `tiles` of them; the last has N - (tiles-1)
   per rows, at most per + 3: a block under 4 rows would take the GEMM's
   dot-product path, which sums in another order, so it joins the one
   before (unless N itself is under 4). */
static void vit__att_tiles(int N, int lowp, int *tiles, int *per) {
    int p = N, nt;
    if (4.0 * N * N > 1048576.0) {
        /* Whole tiles of rows whose scores fit 512 KiB: one layer of DINOv2-S/14's attention at 518 px (1,370
           tokens, 6 heads), f32 on Sapphire Rapids: 29.7 ms in 2 blocks of 685 rows, 26.1 ms in blocks of 96,
           26.5 in blocks of 48; 785 tokens 9.5 -> 8.3 ms, 2,049 tokens 63.6 -> 62.0; BF16 on vdpbf16ps: 44.8
           -> 41.3 ms at 1,370. */
#ifndef VIT_NO_SIMD
        p = (int)(131072.0 / N) / VIT__MR * VIT__MR;
        if (p < VIT__MR) p = VIT__MR;
#else
        p = (int)(131072.0 / N);
        if (p < 4) p = 4;
#endif
#if VIT__AMX
        /* BF16 on the AMX tiles: whole 32-row tiles, 256 KiB: at 518 px one layer's attention 18.6 ms in blocks
           of 685 rows, 13.1 ms in blocks of 32; at 392 px (785 tokens) 6.4 and 4.5 ms (blocks of 64 KiB and
           128 KiB, under 32 rows, ran slower). Measured when the scores were written out; since they go
           straight to exponentials (vit__att_exp_row), blocks of 64 and 128 rows run the same. */
        if (lowp) {
            p = (int)(262144.0 / (4.0 * N)) / 32 * 32;
            if (p < 32) p = 32;
        }
#endif
    }
    (void)lowp;
    nt = (N + p - 1) / p;
    if (nt > 1 && N - (nt - 1) * p < 4) nt--;
    *tiles = nt;
    *per = p;
}

#if VIT__DOT_BF16
/* Pairs along k as the lowp attention lays them out: n, or with AMX tiles
   n rounded up to their 16 pairs a step (the extra ones zero); and so its
   rows of q and of probabilities, for whole 16-row tiles of A (as the
   products' vit__xs_rows). */
static size_t vit__att_pad(size_t n) { return VIT__AMX ? (n + 15) / 16 * 16 : n; }

/* Pairs a row of probabilities holds for N keys: whole panels of NR keys, as vit__att_exp_row writes them (the
   keys past N zero), at least vit__att_pad's. */
static size_t vit__att_prow(size_t N) {
    size_t hv = vit__att_pad((N + 1) / 2), h = VIT__NR / 2;
    return (hv + h - 1) / h * h;
}

/* The pieces of a lowp slot, in floats (uint32 pairs) rounded up to 64
   bytes: part[0] K's panels (keys in NR-wide panels, pairs of HS along
   k), part[1] V's panels (HS in panels, pairs of keys along k), part[2]
   one panel of K rows in bf16 while they are packed, part[3] a block's q
   rows and part[4] its exponentials, as pairs (each padded by
   vit__att_pad), part[5] its rows' sums of e, softmax references and
   vector sums (vit__attx), part[6] for I8's q kᵀ (vit__att_mode 2: K's and
   q's quads take parts 0, 2 and 3, under their pairs) the keys' scales and
   their panels' zero-point terms, and the block's rows' scales, part[7]
   the block's output rows (HS floats each) where they go on as bf16
   (vit__att.ob), part[8] mode 2's: a group of MR rows' scores and their
   maxima (vit__att_p8_rows), V's column scales, their inverses and its
   panels' column sums (vit__att_v8_pack: V's bytes take part[1], the rows
   of u8 probabilities and their scales part[4]), and P V's outputs where
   HS is not whole panels; returns their sum. */
static size_t vit__att_lowp_parts(int N, int HS, int rows, size_t *part) {
    size_t hq = vit__att_pad((size_t)(HS + 1) / 2), hv = vit__att_pad((size_t)(N + 1) / 2), nr = VIT__NR, sum = 0;
    size_t hr = vit__att_prow((size_t)N), keys = ((size_t)N + nr - 1) / nr * nr;
    int i;
    part[0] = keys * hq;
    part[1] = ((size_t)HS + nr - 1) / nr * nr * hv;
    part[2] = nr * (size_t)(HS + 1) / 2;
    part[3] = vit__att_pad((size_t)rows) * hq;
    part[4] = vit__att_pad((size_t)rows) * hr;
    part[5] = (size_t)rows * (2 + VIT__VW);
    part[6] = 2 * keys + (size_t)rows;
    part[7] = (size_t)rows * (size_t)HS;
    {
        size_t hsp = ((size_t)HS + nr - 1) / nr * nr, kp = ((size_t)N + 4) / 4 * 4,
               nblk = (kp + (size_t)vit__kc(VIT_DTYPE_I8) - 1) / (size_t)vit__kc(VIT_DTYPE_I8);
        part[8] = (size_t)VIT__MR * keys + (size_t)VIT__MR * VIT__VW + 2 * hsp + hsp * nblk +
                  ((size_t)HS == hsp ? 0 : (size_t)rows * hsp);
    }
    for (i = 0; i < 9; i++) sum += part[i] = (part[i] + 15) / 16 * 16;
    return sum;
}
#endif

/* f32: the floats of a head's K panels and (vpack) V panels packed
   (vit__head_pack), each rounded up to 64 bytes; none under VIT_NO_SIMD,
   which reads both where they lie. */
static size_t vit__att_kv(int N, int HS, int vpack, size_t *kpart) {
#ifndef VIT_NO_SIMD
    size_t k = ((size_t)N / VIT__NR * VIT__NR * HS + 15) / 16 * 16;
    *kpart = k;
    return k + (vpack ? ((size_t)HS / VIT__NR * VIT__NR * N + 15) / 16 * 16 : 0);
#else
    (void)N; (void)HS; (void)vpack;
    *kpart = 0;
    return 0;
#endif
}

#if VIT__ATT_Q7
/* Mode 3's pieces of a slot after V's f32 panels (vit__att_kv's, not K's), in floats rounded up to 64 bytes:
   part[0] K's quads in panels of NR keys, part[1] one panel's rows while they are rounded, part[2] the keys'
   scales and part[3] their zero-point terms, part[4] a block's rows of q as quads and part[5] their scales,
   part[6] the rows' softmax references and part[7] their vector sums of e (vit__attx); returns their sum. */
static size_t vit__att_q7_parts(int N, int HS, int rows, size_t *part) {
    size_t hq4 = ((size_t)HS + 3) / 4, nr = VIT__NR, keys = ((size_t)N + nr - 1) / nr * nr, sum = 0;
    int i;
    part[0] = keys * hq4;
    part[1] = nr * hq4;
    part[2] = part[3] = keys;
    part[4] = (size_t)rows * hq4;
    part[5] = part[6] = (size_t)rows;
    part[7] = (size_t)rows * VIT__VW;
    for (i = 0; i < 8; i++) sum += part[i] = (part[i] + 15) / 16 * 16;
    return sum;
}
#endif

/* Floats of scratch one thread needs: lowp, the pieces above; f32, K and
   (vpack) V of a head packed, and one block's exponentials unless they go
   to att; mode 3, V (vpack), its pieces and the exponentials. */
static size_t vit__att_slot_v(int N, int HS, int keep, int lowp, int vpack) {
    int nt, per;
    size_t tile, kpart;
    vit__att_tiles(N, lowp, &nt, &per);
    tile = keep ? 0 : (size_t)(per + 3) * (size_t)N;
#if VIT__DOT_BF16
    if (lowp) {
        size_t part[9];
        return vit__att_lowp_parts(N, HS, per + 3, part); /* no scores: vit__att_exp_row */
    }
#endif
    tile += vit__att_kv(N, HS, vpack, &kpart);
#if VIT__ATT_Q7
    if (lowp == 3) {
        size_t part[8];
        return tile - kpart + vit__att_q7_parts(N, HS, per + 3, part);
    }
#endif
    (void)lowp;
    return tile ? tile : 16; /* never 0: callers divide by it */
}

static size_t vit__att_slot(int N, int HS, int keep, int lowp) { return vit__att_slot_v(N, HS, keep, lowp, 1); }

/* A head's K and V packed once for all its blocks of queries (the GEMM
   packed them again for each): kp, K's whole panels of NR keys, k-major
   over HS (n rows of stride ld, as vit__gemm_block packs nn.Linear's
   rows); vp, V's whole panels of NR of its HS columns, keys along k (as
   it packs a (K, N) operand). The last partial panel of each the GEMM
   reads where it lies. The same panels, so the same bits. */
#ifndef VIT_NO_SIMD
static void vit__head_pack(float *kp, float *vp, const float *k, const float *v, int n, int HS, int ld) {
    int n0;
    if (kp) /* mode 3 packs K as int8 (vit__att_k8_panel) */
        for (n0 = 0; n0 + VIT__NR <= n; n0 += VIT__NR) vit__pack_panel(kp + (size_t)n0 * HS, k, ld, n0, VIT__NR, 0, HS);
    if (vp)
        for (n0 = 0; n0 + VIT__NR <= HS; n0 += VIT__NR)
            vit__pack_panel_nn(vp + (size_t)n0 * n, v, ld, n0, VIT__NR, 0, n);
}
#endif

#ifndef VIT_NO_SIMD
/* The attention's softmax in the same pass as q kᵀ: each block of scores goes from the tiles to a buffer in L1 and
   straight to e = exp(s - ref) in the row's probabilities (f32, or lowp's bf16 pairs for P V), never written out
   whole. (Written out as f32 rows, then a pass for each row's max, one for exp and one to normalise, they took 126
   of a 260 ms BF16 forward of DINOv2-S/14 at 518 px on the AMX tiles, and 4 of a layer's 26 ms f32 attention.) A
   row's reference is not its max, which is known only after its last key: it is the max of the row's first NR
   scores, and it moves up only when a later score passes it by VIT__ATT_SLACK, the row's earlier exponentials then
   scaled down to the new one: a lazy form of FlashAttention's online softmax. So e stays within e^16 (f32's scores in
   units of log2 e: 2^16), and softmax, the same whatever the reference, is within rounding of vit__attention_ref's
   (lowp: bf16 rounding; each row's largest weight is exact in one of them, another weight in the other). A move
   costs a pass over the row's earlier keys; one needs a score 16 past all those before it. P V takes the
   unnormalised e, and its row is scaled by post / sum e after (FlashAttention's order): HS products a row, not N. */
#define VIT__ATT_SLACK 16.0f

#if VIT__VW == 16
#define vit__v_any_gt(a, b) (simde_mm512_cmp_ps_mask(a, b, SIMDE_CMP_GT_OQ) != 0)
#else
#define vit__v_any_gt(a, b) (simde_mm256_movemask_ps(simde_mm256_cmp_ps(a, b, SIMDE_CMP_GT_OQ)) != 0)
#endif

/* v with its lanes from n on `fill`, and on zero: a select in registers (a scalar copy through memory, then a
   vector load of it, waited on a failed store forward: AVX2's f32 attention, a layer of ViT-B/16, 1.99 -> 1.86 ms). */
static VIT__INLINE vit__vf vit__v_fill_from(vit__vf v, int n, float fill) {
#if VIT__VW == 16
    return simde_mm512_mask_mov_ps(simde_mm512_set1_ps(fill), (simde__mmask16)((1u << n) - 1u), v);
#else
    simde__m256i lane = simde_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    simde__m256 keep = simde_mm256_castsi256_ps(simde_mm256_cmpgt_epi32(simde_mm256_set1_epi32(n), lane));
    return simde_mm256_blendv_ps(simde_mm256_set1_ps(fill), v, keep);
#endif
}
#define vit__v_keep(v, n) vit__v_fill_from(v, n, 0.0f)

/* The softmax state for one block of query rows (vit__att_exp_row): p, lowp's exponentials as bf16 (stride ldp
   uint16), else NULL; att, the same in f32 (stride lda): f32's probabilities, or lowp's kept maps (else NULL); ref
   and acc, each row's reference and the vector sums of its f32 e (VIT__VW floats a row); bt and bidx, a relative
   position bias table added to the scores and each score's entry of it (stride lda), or NULL. */
typedef struct vit__attx {
    uint16_t *p;
    int ldp, lda;
    float *att, *ref, *acc, alpha;
    const float *bt;
    const int32_t *bidx;
    float *sc, *mx; /* I8's mode 2: a group of rows' scores (lds floats a row) and their maxima (VIT__VW a row) */
    int lds;
} vit__attx;

/* Row i's products t0, t1 (lanes [0, nv)) with keys [n0, n0 + nv) (nv <= NR) into its scores alpha t (plus the
   bias) and their exponentials; vit__att_exp_row's from NR floats at c. lowp (a constant once inlined):
   vit__v_exp_lo, whose error bf16's rounding hides, and the bf16 pairs; else f32 only, the scores in units of
   log2 e (alpha has it, the bias is scaled here) and 2^s by vit__v_exp2 (e^s by vit__v_exp before: one layer of
   DINOv2-S/14's f32 attention at 518 px, one thread, six alternating runs, 13.6-13.9 -> 13.2-13.5 ms; ViT-B/16's at
   B = 8, 5.70-5.99 -> 5.48-5.64 ms). */
static VIT__INLINE void vit__att_exp_v(const vit__attx *x, vit__vf t0, vit__vf t1, int i, int n0, int nv,
                                       const int lowp) {
    int lo = nv < VIT__VW ? nv : VIT__VW, hi = nv - lo, k;
    uint16_t *pi = lowp ? x->p + (size_t)i * x->ldp : NULL;
    float R = x->ref[i], *ai = x->acc + (size_t)i * VIT__VW, *atti = x->att ? x->att + (size_t)i * x->lda : NULL;
    vit__vf e0, e1;
    if (nv < VIT__NR) {
        t0 = vit__v_fill_from(t0, lo, -FLT_MAX);
        t1 = vit__v_fill_from(t1, hi, -FLT_MAX);
    }
    if (x->alpha != 1.0f) { t0 = vit__v_mul(t0, vit__v_set1(x->alpha)); t1 = vit__v_mul(t1, vit__v_set1(x->alpha)); }
    if (x->bt) {
        const int32_t *bi = x->bidx + (size_t)i * x->lda + n0;
        vit__vf g0, g1;
        if (nv == VIT__NR) {
            g0 = vit__v_gather(x->bt, bi);
            g1 = vit__v_gather(x->bt, bi + VIT__VW);
        } else {
            float g[VIT__NR];
            for (k = 0; k < VIT__NR; k++) g[k] = k < nv ? x->bt[bi[k]] : 0.0f;
            g0 = vit__v_load(g);
            g1 = vit__v_load(g + VIT__VW);
        }
        if (lowp) {
            t0 = vit__v_add(t0, g0);
            t1 = vit__v_add(t1, g1);
        } else { /* f32: in log2 e units, as the scores */
            t0 = vit__v_fma(g0, vit__v_set1(1.44269504088896341f), t0);
            t1 = vit__v_fma(g1, vit__v_set1(1.44269504088896341f), t1);
        }
    }
    if (n0 == 0 || vit__v_any_gt(vit__v_max(t0, t1), vit__v_set1(R + VIT__ATT_SLACK))) {
        float nr = vit__v_hmax(vit__v_max(t0, t1)), f;
        if (n0) { /* a move */
            f = lowp ? expf(R - nr) : exp2f(R - nr);
            vit__v_store(ai, vit__v_mul(vit__v_load(ai), vit__v_set1(f)));
            if (lowp)
                for (k = 0; k < n0; k++) pi[k] = vit__bf16_round(vit__bf16_float(pi[k]) * f);
            if (atti)
                for (k = 0; k < n0; k++) atti[k] *= f;
        } else
            vit__v_store(ai, vit__v_zero());
        x->ref[i] = R = nr;
    }
    e0 = vit__v_sub(t0, vit__v_set1(R));
    e1 = vit__v_sub(t1, vit__v_set1(R));
    if (nv < VIT__NR) { /* the lanes past the keys: exp(0), not a denormal exp(-FLT_MAX) (an assist per vector
                           took a third of the softmax at 197 keys), then 0, in the sum and as the pairs' padding */
        e0 = vit__v_keep(e0, lo);
        e1 = vit__v_keep(e1, hi);
        e0 = vit__v_keep(lowp ? vit__v_exp_lo(e0) : vit__v_exp2(e0), lo);
        e1 = vit__v_keep(lowp ? vit__v_exp_lo(e1) : vit__v_exp2(e1), hi);
    } else {
        e0 = lowp ? vit__v_exp_lo(e0) : vit__v_exp2(e0);
        e1 = lowp ? vit__v_exp_lo(e1) : vit__v_exp2(e1);
    }
    vit__v_store(ai, vit__v_add(vit__v_add(vit__v_load(ai), e0), e1));
#if VIT__DOT_BF16
    if (lowp) {
        vit__v_store_bf16(pi + n0, e0);
        vit__v_store_bf16(pi + n0 + VIT__VW, e1);
    }
#endif
    if (atti) {
        vit__v_store_part(atti + n0, e0, lo);
        if (hi) vit__v_store_part(atti + n0 + VIT__VW, e1, hi);
    }
}
#if VIT__WIDE && VIT__DOT_BF16
/* Row i's scores of two panels from n0 > 0, the first whole (t0, t1; the second's nv keys t2, t3), lowp: as
   vit__att_exp_v on each in turn, the same bits, with the row's state read and written once where neither panel
   moves its reference (the common case; else, or with a bias, kept maps or a partial panel, vit__att_exp_v
   twice). */
static VIT__INLINE void vit__att_exp_v2(const vit__attx *x, vit__vf t0, vit__vf t1, vit__vf t2, vit__vf t3, int i,
                                        int n0, int nv) {
    float R = x->ref[i], *ai = x->acc + (size_t)i * VIT__VW;
    uint16_t *pi = x->p + (size_t)i * x->ldp + n0;
    vit__vf u0 = t0, u1 = t1, u2 = t2, u3 = t3, vr;
    if (x->alpha != 1.0f) {
        vit__vf a = vit__v_set1(x->alpha);
        u0 = vit__v_mul(u0, a); u1 = vit__v_mul(u1, a); u2 = vit__v_mul(u2, a); u3 = vit__v_mul(u3, a);
    }
    if (x->bt || x->att || nv < VIT__NR ||
        vit__v_any_gt(vit__v_max(vit__v_max(u0, u1), vit__v_max(u2, u3)), vit__v_set1(R + VIT__ATT_SLACK))) {
        vit__att_exp_v(x, t0, t1, i, n0, VIT__NR, 1);
        vit__att_exp_v(x, t2, t3, i, n0 + VIT__NR, nv, 1);
        return;
    }
    vr = vit__v_set1(R);
    u0 = vit__v_exp_lo(vit__v_sub(u0, vr));
    u1 = vit__v_exp_lo(vit__v_sub(u1, vr));
    u2 = vit__v_exp_lo(vit__v_sub(u2, vr));
    u3 = vit__v_exp_lo(vit__v_sub(u3, vr));
    vit__v_store(ai, vit__v_add(vit__v_add(vit__v_add(vit__v_add(vit__v_load(ai), u0), u1), u2), u3));
    vit__v_store_bf16(pi, u0);
    vit__v_store_bf16(pi + VIT__VW, u1);
    vit__v_store_bf16(pi + VIT__NR, u2);
    vit__v_store_bf16(pi + VIT__NR + VIT__VW, u3);
}
#endif
static VIT__INLINE void vit__att_exp_row(const vit__attx *x, const float *c, int i, int n0, int nv, const int lowp) {
    /* plain loads, which the tile's stores to c forward to (a masked load waits for them) */
    vit__att_exp_v(x, vit__v_load(c), vit__v_load(c + VIT__VW), i, n0, nv, lowp);
}

/* The most rows a block holds (vit__att_tiles: N when N <= 512, else under 256 + 3), and the f32 rows whose
   softmax state is live at once (vit__att_exp_f32; K's panels are read once for each such group). */
#define VIT__ATT_ROWS 512
#define VIT__ATT_SUB 48

/* Rows [m, m + mr) of one panel's f32 scores (sc, NR floats a row, times alpha already; keys [n0, n0 + nv)) into
   their softmax state, lowp 0 (the f32 attention's, and I8's mode 3). Where the panel is whole and no row's
   reference moves (the common case), all rows at once: vit__att_exp_v's operations for each, the rows'
   exponentials side by side (one row after another, each row's chain of dependent operations had waited on the
   last). A NaN score is passed over in the test as vit__att_exp_v's compare passes it over (max(d, over) keeps
   over where d is NaN). Else vit__att_exp_v a row at a time. The same bits either way. Called, not inlined: in
   each of its 18 tiles it took clang's -O0 sanitizer build of vit.h from 21 to 30 s (23.5 s so), and a layer at
   1,370 and 197 keys ran the same (1.000x, 0.996x fastest over fastest). */
static VIT__NOINLINE void vit__att_exp_rows(const int mr, const vit__attx *ax, float (*sc)[VIT__NR], int m, int n0,
                                            int nv) {
    int i;
    if (n0 && nv == VIT__NR && !ax->bt && ax->att && ax->alpha == 1.0f) {
        vit__vf over = vit__v_set1(-FLT_MAX);
#define VIT__OVER_AF(i)                                                                                       \
    if (mr > i)                                                                                               \
        over = vit__v_max(vit__v_sub(vit__v_max(vit__v_load(sc[i]), vit__v_load(sc[i] + VIT__VW)),           \
                                     vit__v_set1(ax->ref[m + i] + VIT__ATT_SLACK)),                           \
                          over);
        VIT__ROWS(VIT__OVER_AF)
        if (!vit__v_any_gt(over, vit__v_zero())) {
#define VIT__EXP_AF(i)                                                                                        \
    if (mr > i) {                                                                                             \
        vit__vf r_ = vit__v_set1(ax->ref[m + i]), e0_ = vit__v_exp2(vit__v_sub(vit__v_load(sc[i]), r_)),       \
                e1_ = vit__v_exp2(vit__v_sub(vit__v_load(sc[i] + VIT__VW), r_));                              \
        float *ai_ = ax->acc + (size_t)(m + i) * VIT__VW, *si_ = ax->att + (size_t)(m + i) * ax->lda + n0;   \
        vit__v_store(ai_, vit__v_add(vit__v_add(vit__v_load(ai_), e0_), e1_));                                \
        vit__v_store(si_, e0_);                                                                               \
        vit__v_store(si_ + VIT__VW, e1_);                                                                     \
    }
            VIT__ROWS(VIT__EXP_AF)
            return;
        }
#undef VIT__OVER_AF
#undef VIT__EXP_AF
    }
    for (i = 0; i < mr; i++) vit__att_exp_v(ax, vit__v_load(sc[i]), vit__v_load(sc[i] + VIT__VW), m + i, n0, nv, 0);
}

/* F32 q kᵀ's tile: mr rows of q (t->xf: rows t->ldx apart, or packed as vit__xp_pack lays them, xp) against one
   panel of K's (t->bf, zeros past its t->nv keys) over all t->kc = HS, times t->alpha, straight into rows [m, m + mr)
   of the softmax state (vit__att_exp_rows), as the BF16 and I8 attentions' tiles. Through the products' tile
   (vit__tile_x) the scores went to a buffer and back, and that tile's prologue, prefetch test every 8 k and
   finish on bias and epilogue fields ran once per 64 k at HS = 64: perf had 18% of its samples outside the k loop.
   One layer's attention, one thread, Zen 3 (AVX2), alternating pairs: DINOv2-S/14 at 518 px (1,370 keys) 0.972x
   fastest over fastest (faster in 51 of 60), 785 keys 0.947x (53 of 60), ViT-B/16's 197 keys 0.973x (140 of
   200); with the rows' exponentials together (vit__att_exp_rows) a further 0.976x, 0.967x and 0.979x (32 of 40,
   30 of 40, 140 of 200). Each score is the same FMAs in k order times alpha, each exponential and sum
   vit__att_exp_v's: the same bits. (AVX-512 runs pairs of panels on its wide tile, vit__att_exp_f32, and this one
   on a last odd panel.) */
#define VIT__DECL_AF(i) vit__vf c##i##a = vit__v_zero(), c##i##b = vit__v_zero();
#define VIT__SAVE_AF(i)                                     \
    if (mr > i) {                                           \
        vit__v_store(acc[i], vit__v_mul(va, c##i##a));      \
        vit__v_store(acc[i] + VIT__VW, vit__v_mul(va, c##i##b)); \
    }
static VIT__INLINE void vit__att_tile_f32(const int mr, const int xp, const vit__tl *t, const vit__attx *ax, int m,
                                          int n0) {
    const float *x = t->xf, *bp = t->bf;
    const int nvec = 2, xk = xp ? VIT__MR : 1;
    int k, ldx = xp ? 1 : t->ldx, kc = t->kc, nv = t->nv;
    float acc[12][VIT__NR]; /* the sums leave the registers before the exponentials, as vit__att_tile_i8 says */
    vit__vf va = vit__v_set1(t->alpha);
    VIT__ROWS(VIT__DECL_AF)
    for (k = 0; k < kc; k++) {
        vit__vf b0 = vit__v_load(bp + (size_t)k * VIT__NR), b1 = vit__v_load(bp + (size_t)k * VIT__NR + VIT__VW);
        VIT__ROWS(VIT__FMA_ROW)
    }
    VIT__ROWS(VIT__SAVE_AF)
    vit__att_exp_rows(mr, ax, acc, m, n0, nv);
}
#undef VIT__DECL_AF
#undef VIT__SAVE_AF
typedef void (*vit__att_f32_fn)(const vit__tl *t, const vit__attx *ax, int m, int n0);
#define VIT__ATT_F32_DEF(f, mr)                                                                                     \
    static void f##0_##mr(const vit__tl *t, const vit__attx *ax, int m, int n0) { f(mr, 0, t, ax, m, n0); }         \
    VIT__ATT_F32_XP(f, mr)
#define VIT__ATT_F32_FN0(f, mr) f##0_##mr,
#if VIT__XP
#define VIT__ATT_F32_XP(f, mr) \
    static void f##1_##mr(const vit__tl *t, const vit__attx *ax, int m, int n0) { f(mr, 1, t, ax, m, n0); }
#define VIT__ATT_F32_FN1(f, mr) f##1_##mr,
#else
#define VIT__ATT_F32_XP(f, mr)
#endif
VIT__MRS(VIT__ATT_F32_DEF, vit__att_tile_f32)
static const vit__att_f32_fn vit__att_tiles_f32[1 + VIT__XP][VIT__MR + 1] = {
    {NULL, VIT__MRS(VIT__ATT_F32_FN0, vit__att_tile_f32)},
#if VIT__XP
    {NULL, VIT__MRS(VIT__ATT_F32_FN1, vit__att_tile_f32)},
#endif
};

/* f32 q kᵀ, times alpha, for rows [0, rows) of q (stride ldq) against the n keys of k (stride ldk, HS each): their
   whole panels as vit__head_pack lays them in kp, the last partial one packed here; MR x NR blocks of scores on
   vit__att_tile_f32 (HS within one k block), else the F32 tiles in VIT__KC blocks of HS, into the softmax state,
   VIT__ATT_SUB rows at a time (K's panels read again for each; ax gives the first row's att and bidx, and ref and
   acc for VIT__ATT_SUB rows); each row's sum of e to rs. */
static void vit__att_exp_f32(const vit__attx *ax, const float *q, int ldq, const float *kp, const float *k, int ldk,
                             int HS, int rows, int n, float alpha, float *rs) {
    float pbuf[VIT__MR * VIT__NR + 16], *pad = (float *)(((uintptr_t)pbuf + 63) & ~(uintptr_t)63);
    float tbuf[VIT__KC * VIT__NR + 16], *tail = (float *)(((uintptr_t)tbuf + 63) & ~(uintptr_t)63);
    vit__attx x = *ax;
    vit__tl t;
    int n0, g0, m, r, c0, have = -1;
#if VIT__XP
    /* the rows' q packed for the tiles once a group (vit__xp_pack), read against every panel of keys: one layer of
       DINOv2-S/14's attention at 518 px (1,370 keys), one thread, Zen 3, 0.95-0.98x (faster in 31 of 40 alternating
       pairs, three runs); 577 keys 0.99x (39 of 60), 401 0.99x (59 of 100), 257 1.00x (76 of 150), 197 1.01x
       (80 and 91 of 200 faster): from 256 keys. The same bits. */
    float qbuf[VIT__ATT_SUB * 128];
    int qp = HS <= 128 && n >= 256;
#endif
    memset(&t, 0, sizeof t);
    memset(pbuf, 0, sizeof pbuf); /* as vit__att_exp_tiles */
    t.y = pad;
    t.ldy = VIT__NR;
    t.ldx = ldq;
    t.alpha = alpha;
    for (c0 = 0; c0 < rows; c0 += VIT__ATT_SUB) {
        int cr = rows - c0 < VIT__ATT_SUB ? rows - c0 : VIT__ATT_SUB;
        x.att = ax->att + (size_t)c0 * ax->lda;
        x.bidx = ax->bidx ? ax->bidx + (size_t)c0 * ax->lda : NULL;
#if VIT__XP
        if (qp) vit__xp_pack(qbuf, q + (size_t)c0 * ldq, ldq, HS, cr, NULL, 0);
#endif
        for (n0 = 0; n0 < n; n0 += VIT__NR) {
            t.nv = n - n0 < VIT__NR ? n - n0 : VIT__NR;
#if VIT__WIDE
            if (n0 + 2 * VIT__NR <= n) { /* two whole panels on the wide tile, the second's scores from pad + 6 NR:
                                            each row's exponentials still come a panel at a time, in order */
                vit__tl u = t;
                u.y = pad + VIT__MR / 2 * VIT__NR;
                for (m = 0; m < cr; m += VIT__MR / 2) {
                    int mr = cr - m < VIT__MR / 2 ? cr - m : VIT__MR / 2;
                    for (g0 = 0; g0 < HS; g0 += VIT__KC) {
                        /* the fields that change, in both: a copy of t here (u = t), wide loads of the scalars
                           just stored, waited on failed store forwards (f32 at 518 px: 14% of the task's time) */
                        u.kc = t.kc = HS - g0 < VIT__KC ? HS - g0 : VIT__KC;
                        u.first = t.first = g0 == 0;
                        u.last = t.last = g0 + t.kc == HS;
                        t.bf = kp + (size_t)n0 * HS + (size_t)g0 * VIT__NR;
                        u.bf = t.bf + (size_t)VIT__NR * HS;
                        u.xf = t.xf = q + (size_t)(c0 + m) * ldq + g0;
                        vit__tiles2_f32[mr](&t, &u);
                    }
                    for (r = 0; r < mr; r++) {
                        vit__att_exp_row(&x, pad + (size_t)r * VIT__NR, m + r, n0, VIT__NR, 0);
                        vit__att_exp_row(&x, u.y + (size_t)r * VIT__NR, m + r, n0 + VIT__NR, VIT__NR, 0);
                    }
                }
                n0 += VIT__NR;
                continue;
            }
#endif
            for (m = 0; m < cr; m += VIT__MR) {
                int mr = cr - m < VIT__MR ? cr - m : VIT__MR;
                for (g0 = 0; g0 < HS; g0 += VIT__KC) {
                    t.kc = HS - g0 < VIT__KC ? HS - g0 : VIT__KC;
                    t.first = g0 == 0;
                    t.last = g0 + t.kc == HS;
                    if (t.nv == VIT__NR) t.bf = kp + (size_t)n0 * HS + (size_t)g0 * VIT__NR;
                    else { /* packed once a call, unless HS takes more than one k block */
                        if (have != g0) vit__pack_panel(tail, k, ldk, n0, t.nv, g0, t.kc);
                        have = g0;
                        t.bf = tail;
                    }
                    t.xf = q + (size_t)(c0 + m) * ldq + g0;
                    if (HS > VIT__KC) { /* the F32 tiles' k blocks into pad (q never packed: qp's HS <= 128) */
                        vit__tiles[t.nv > VIT__VW][mr](&t);
                        continue;
                    }
#if VIT__XP
                    if (qp) t.xf = qbuf + (size_t)m * HS;
                    vit__att_tiles_f32[qp][mr](&t, &x, m, n0); /* one k block: the attention's own tile */
#else
                    vit__att_tiles_f32[0][mr](&t, &x, m, n0);
#endif
                }
                if (HS > VIT__KC) /* the F32 tiles' scores, in pad */
                    for (r = 0; r < mr; r++) vit__att_exp_row(&x, pad + (size_t)r * VIT__NR, m + r, n0, t.nv, 0);
            }
        }
        for (r = 0; r < cr; r++) rs[c0 + r] = vit__v_hsum(vit__v_load(x.acc + (size_t)r * VIT__VW));
    }
}
/* The end of a query row's attention once the sum of its e is known: its output row o (HS) times post / sum, and
   its kept map S (N floats, or NULL) e post / sum, softmax * post. */
static void vit__att_row_end(float *o, int HS, float *S, int N, float sum, float post) {
    float f = post / sum;
    int j;
    for (j = 0; j + VIT__VW <= HS; j += VIT__VW) vit__v_store(o + j, vit__v_mul(vit__v_load(o + j), vit__v_set1(f)));
    for (; j < HS; j++) o[j] *= f;
    if (S) {
        vit__vf vinv = vit__v_set1(1.0f / sum), vpost = vit__v_set1(post);
        for (j = 0; j + VIT__VW <= N; j += VIT__VW)
            vit__v_store(S + j, vit__v_mul(vit__v_mul(vit__v_load(S + j), vinv), vpost));
        for (; j < N; j++) S[j] = S[j] * (1.0f / sum) * post;
    }
}
#endif

#if VIT__DOT_BF16 || VIT__DOT_I8
/* The rows of q, k and v are 3C floats apart in the qkv product's output, which an I8 product streamed past the caches
   when large (vit__y_stream, from 4 MiB then): converted a row at a time, each waited on memory (vit__q8s_row takes a
   row's range, then rounds it: few rows in flight), so the row VIT__ATT_PF ahead is asked for first (q and k:
   DINOv2-S/14 I8 at 518 px, one thread, 0.39 -> 0.365 s; v's, read in pairs as V is packed: ViT-B/16 I8 at B = 8 on two
   threads, the best of 3 passes in five alternating runs, 0.427-0.456 -> 0.421-0.441 s). The BF16 attention's q and K
   rows too: each row's rounding to bf16 had waited on memory as well (perf, DINOv2-S/14 BF16 at 518 px: the task and
   the rows' conversion 12.5% -> 10.2% of the forward; the forward 0.3-0.5%). 16 rows ahead, not 8, on Zen 5: one layer
   of ViT-B/16's attention at B = 8, one thread, three alternating runs, BF16 3.46-3.52 -> 3.34-3.40 ms, I8 3.16-3.21 ->
   3.05-3.09 ms, f32 the same or faster (518 px too). */
#define VIT__ATT_PF 16
typedef void (*vit__att_fn)(const vit__tl *t, const vit__attx *ax, int m, int n0);
#define VIT__ATT_DEF(f, mr) \
    static void f##_##mr(const vit__tl *t, const vit__attx *ax, int m, int n0) { f(mr, t, ax, m, n0); }
#define VIT__ATT_FN(f, mr) f##_##mr,
#endif

#if VIT__DOT_I8
/* Row x (n floats) to int8 on its symmetric scale (vit__q8s_scale, vit__q8s: the same roundings, within +-qmax),
   each as the byte q + off (q kᵀ's q: mode 2 off 128 - VIT__I8_XOFF, u8 for vpdpbusd; mode 3 qmax 63, off 64,
   u8 for vpmaddubsw; k: 0, s8), zeros up to a multiple of 4; returns the scale. A head of 64 took 37.7 cycles,
   25.3 with one reduction and the packs (ViT-B/16 I8, B = 8: 1.5% of a pass, each of q's and k's heads of the qkv
   product's outputs). */
static float vit__q8s_row(unsigned char *d, const float *x, int n, int off, int qmax) {
    vit__vi vmax = vit__vi_zero(), mag = vit__vi_set1(0x7fffffff);
    float amax, inv, s;
    int k;
    /* max |x| as the bits' integer max (of non-negative floats, the same order), Inf and NaN above every finite
       value's: with the bits held to +Inf's, one reduction says both the max and whether all are finite */
    for (k = 0; k + VIT__VW <= n; k += VIT__VW)
        vmax = vit__vi_max(vmax, vit__vi_and(vit__v_as_i(vit__v_load(x + k)), mag));
    amax = vit__v_hmax(vit__v_as_f(vit__vi_min(vmax, vit__vi_set1(0x7f800000))));
    for (; k < n; k++) amax = !(fabsf(x[k]) < INFINITY) ? INFINITY : fabsf(x[k]) > amax ? fabsf(x[k]) : amax;
    s = vit__q8s_scale(amax, amax < INFINITY, qmax, &inv);
    if (inv == 0.0f) { /* not finite: no NaN reaches the conversion's result */
        memset(d, off, (size_t)n);
        for (k = n; k % 4; k++) d[k] = 0;
        return s;
    }
    {
        vit__vf vinv = vit__v_set1(inv);
        /* |x inv| <= qmax (1 + 3 ulp) rounds within +-qmax: the packs' saturation never acts */
        for (k = 0; k + 4 * VIT__VW <= n; k += 4 * VIT__VW)
            vit__vi_store_8x4(d + k, vit__v_round(vit__v_mul(vit__v_load(x + k), vinv)),
                              vit__v_round(vit__v_mul(vit__v_load(x + k + VIT__VW), vinv)),
                              vit__v_round(vit__v_mul(vit__v_load(x + k + 2 * VIT__VW), vinv)),
                              vit__v_round(vit__v_mul(vit__v_load(x + k + 3 * VIT__VW), vinv)), 0, 127, off);
        for (; k + VIT__VW <= n; k += VIT__VW)
            vit__vi_store_u8(d + k, vit__vi_add(vit__v_round(vit__v_mul(vit__v_load(x + k), vinv)), vit__vi_set1(off)));
    }
    for (; k < n; k++) d[k] = (unsigned char)(vit__q8s(x[k], inv, qmax) + off);
    for (; k % 4; k++) d[k] = 0;
    return s;
}

/* I8 q kᵀ's tile: scores (S (s_k scale)) s_q for mr rows of q's quads (x, ldx) against one panel of K's (bp, kc
   quads of NR keys, n0 the first), all NR keys (a partial panel's are zero past its keys). Mode 3 (narrow):
   straight into rows [m, m + mr) of the softmax state (vit__att_exp_rows: through a buffer the scores went to
   memory and back, and the call through the table kept the loop's vectors in memory around it; DINOv2-S/14 I8 at
   518 px, one thread, alternating: attention 170-171 -> 167-168 ms, the forward 0.333-0.338 -> 0.329-0.334 s).
   Mode 2: with the bias if any, into the group's rows of scores (ax->sc from key n0, rows [0, mr) for the
   block's [m, m + mr)) and each row's running max (ax->mx, the keys past the panel's nv left out), for
   vit__att_p8_rows.
   t->wsum holds the panel's zero-point terms, -off times each key's sum of k (q's bytes are q + off, read as
   u8 by vpdpbusd or, narrow, vpmaddubsw: vit__vi_dot4u), added to the sums; t->ws the keys' s_k scale, t->sx the
   rows' s_q. The integer sums are exact, so the scores are vit__attention_ref's bits (mode 3: its f32 scores in
   units of log2 e, which s_k carries, as vit__att_exp_v's lowp 0 takes them). */
static VIT__INLINE void vit__att_tile_i8(const int mr, const vit__tl *t, const vit__attx *ax, int m, int n0,
                                         const int narrow) {
    const uint32_t *x = t->x, *bp = t->bp;
    const float *sx = t->sx;
    int g, i, ldx = t->ldx, kc = t->kc, nv = t->nv;
    int32_t acc[12][VIT__NR]; /* the sums leave the registers before the finish, as vit__tile_i8_rows's: with it
                                 inlined on them, GCC 12 spilled sums inside the loop (the tile at half speed) */
    /* the sums start at the keys' zero-point terms (exact in int32, and two adds a row fewer in the finish) */
    vit__vi z0 = vit__vi_load(t->wsum), z1 = vit__vi_load(t->wsum + VIT__VW);
    vit__vf s0, s1;
#define VIT__DECL_I(i) vit__vi c##i##a = z0, c##i##b = z1;
    VIT__ROWS(VIT__DECL_I)
#undef VIT__DECL_I
    for (g = 0; g < kc; g++) {
        vit__vi b0 = vit__vi_load(bp + (size_t)g * VIT__NR), b1 = vit__vi_load(bp + (size_t)g * VIT__NR + VIT__VW);
#define VIT__STEP(i)                                                   \
        if (mr > i) {                                                  \
            vit__vi a = vit__vi_set1((int32_t)x[(size_t)i * ldx + g]); \
            if (narrow) {                                              \
                c##i##a = vit__vi_dot4u(c##i##a, a, b0);               \
                c##i##b = vit__vi_dot4u(c##i##b, a, b1);               \
            } else {                                                   \
                c##i##a = vit__vi_dot4(c##i##a, a, b0);                \
                c##i##b = vit__vi_dot4(c##i##b, a, b1);                \
            }                                                          \
        }
        VIT__ROWS(VIT__STEP)
#undef VIT__STEP
    }
#define VIT__SAVE_I(i)                              \
    if (mr > i) {                                   \
        vit__vi_store(acc[i], c##i##a);             \
        vit__vi_store(acc[i] + VIT__VW, c##i##b);   \
    }
    VIT__ROWS(VIT__SAVE_I)
#undef VIT__SAVE_I
    /* the panel's scales loaded once, every field of t read before the stores to y (through t, each
       store could have changed them, and GCC read them again a row and vector: perf, DINOv2-S/14 I8 at 518 px,
       this tile 14.9% -> 12-13.5% of the forward) */
    s0 = vit__v_load(t->ws);
    s1 = vit__v_load(t->ws + VIT__VW);
#if VIT__ATT_Q7
    if (narrow) { /* mode 3: the rows' f32 exponentials together (vit__att_exp_rows) */
        float sc[12][VIT__NR];
        for (i = 0; i < mr; i++) {
            vit__vf r = vit__v_set1(sx[i]);
            vit__v_store(sc[i], vit__v_mul(vit__v_mul(vit__vi_float(vit__vi_load(acc[i])), s0), r));
            vit__v_store(sc[i] + VIT__VW, vit__v_mul(vit__v_mul(vit__vi_float(vit__vi_load(acc[i] + VIT__VW)), s1), r));
        }
        vit__att_exp_rows(mr, ax, sc, m, n0, nv);
        return;
    }
#endif
    for (i = 0; i < mr; i++) { /* mode 2 */
        vit__vf r = vit__v_set1(sx[i]), f0 = vit__v_mul(vit__v_mul(vit__vi_float(vit__vi_load(acc[i])), s0), r),
                f1 = vit__v_mul(vit__v_mul(vit__vi_float(vit__vi_load(acc[i] + VIT__VW)), s1), r);
        float *si = ax->sc + (size_t)i * ax->lds + n0, *mi = ax->mx + (size_t)i * VIT__VW;
        if (ax->bt) {
            const int32_t *bi = ax->bidx + (size_t)(m + i) * ax->lda + n0;
            vit__vf l2e = vit__v_set1(1.44269504088896341f); /* the scores are in units of log2 e */
            if (nv == VIT__NR) {
                f0 = vit__v_fma(vit__v_gather(ax->bt, bi), l2e, f0);
                f1 = vit__v_fma(vit__v_gather(ax->bt, bi + VIT__VW), l2e, f1);
            } else {
                float g[VIT__NR];
                int k;
                for (k = 0; k < VIT__NR; k++) g[k] = k < nv ? ax->bt[bi[k]] : 0.0f;
                f0 = vit__v_fma(vit__v_load(g), l2e, f0);
                f1 = vit__v_fma(vit__v_load(g + VIT__VW), l2e, f1);
            }
        }
        vit__v_store(si, f0);
        vit__v_store(si + VIT__VW, f1);
        if (nv < VIT__NR) {
            int lo = nv < VIT__VW ? nv : VIT__VW;
            f0 = vit__v_fill_from(f0, lo, -FLT_MAX);
            f1 = vit__v_fill_from(f1, nv - lo, -FLT_MAX);
        }
        vit__v_store(mi, vit__v_max(vit__v_load(mi), vit__v_max(f0, f1)));
    }
}
#if VIT__DOT_BF16 /* mode 2: the scores and their rows' maxima, for the exponentials in u8 (vit__att_p8_rows) */
static VIT__INLINE void vit__att_tile_i8s(const int mr, const vit__tl *t, const vit__attx *ax, int m, int n0) {
    vit__att_tile_i8(mr, t, ax, m, n0, 0);
}
VIT__MRS(VIT__ATT_DEF, vit__att_tile_i8s)
static const vit__att_fn vit__att_tiles_i8[VIT__MR + 1] = {NULL, VIT__MRS(VIT__ATT_FN, vit__att_tile_i8s)};
#else /* mode 3: q on 7 bits, the exponentials in f32 */
static VIT__INLINE void vit__att_tile_i8f(const int mr, const vit__tl *t, const vit__attx *ax, int m, int n0) {
    vit__att_tile_i8(mr, t, ax, m, n0, 1);
}
VIT__MRS(VIT__ATT_DEF, vit__att_tile_i8f)
static const vit__att_fn vit__att_tiles_i8[VIT__MR + 1] = {NULL, VIT__MRS(VIT__ATT_FN, vit__att_tile_i8f)};
#endif

/* Keys [n0, n0 + nv) of a head's K (rows of HS floats, ld apart from kb, n in all) as one panel of int8 quads at
   kp (kt: the panel's rows while rounded, hq4 quads each), each key's scale times `scale` to sk (NR of them, 0
   past nv), the row VIT__ATT_PF ahead asked for first (vit__att_k8_terms then). */
static void vit__att_k8_panel(uint32_t *kp, uint32_t *kt, float *sk, const float *kb, int ld, int n0, int nv, int n,
                              int HS, float scale) {
    int j, hq4 = (HS + 3) / 4;
    for (j = 0; j < VIT__NR; j++) {
        unsigned char *d = (unsigned char *)(kt + (size_t)j * hq4);
        if (n0 + j + VIT__ATT_PF < n) vit__prefetch_row(kb + (size_t)(n0 + j + VIT__ATT_PF) * ld, HS);
        sk[j] = j < nv ? vit__q8s_row(d, kb + (size_t)(n0 + j) * ld, HS, 0, 127) * scale : 0.0f;
    }
    vit__pack_panel_u32(kp, (const unsigned char *)kt, (size_t)hq4 * 4, nv, hq4 * 4);
}

/* A panel of K's quads' zero-point terms, -off times each key's sum of k, to zt (NR). */
static void vit__att_k8_terms(int32_t *zt, const uint32_t *kp, int hq4, int off) {
    int32_t ws[VIT__NR];
    int j;
    vit__panel_wsum(ws, kp, hq4);
    for (j = 0; j < VIT__NR; j++) zt[j] = -off * ws[j];
}

/* Rows [0, rows) of a block of q (HS floats each, ld apart) as int8 quads (hq4 a row of qx) as vit__q8s_row's off
   and qmax give them, their scales to sq, the row VIT__ATT_PF ahead asked for first. */
static void vit__att_q8_rows(uint32_t *qx, float *sq, const float *q, int ld, int rows, int HS, int off, int qmax) {
    int i, hq4 = (HS + 3) / 4;
    for (i = 0; i < rows; i++) {
        const float *qi = q + (size_t)i * ld;
        if (i + VIT__ATT_PF < rows) vit__prefetch_row(qi + (size_t)VIT__ATT_PF * ld, HS);
        sq[i] = vit__q8s_row((unsigned char *)(qx + (size_t)i * hq4), qi, HS, off, qmax);
    }
}

#if VIT__ATT_Q7
/* q kᵀ in int8 for rows [0, rows) of q's quads (x, ldx uint32 a row, sq their scales) against K's panels (bp, kc
   quads a key; sk and zt a key's scale and zero-point term, as vit__att_tile_i8 takes them), n keys, into the
   softmax state as vit__att_exp_tiles. */
static void vit__att_exp_i8(const vit__attx *ax, const uint32_t *x, int ldx, const uint32_t *bp, int kc,
                            const float *sk, const int32_t *zt, const float *sq, int rows, int n) {
    vit__tl t;
    int n0, m;
    memset(&t, 0, sizeof t);
    t.ldx = ldx;
    t.kc = kc;
    for (n0 = 0; n0 < n; n0 += VIT__NR) {
        t.nv = n - n0 < VIT__NR ? n - n0 : VIT__NR;
        t.bp = bp + (size_t)n0 * kc;
        t.ws = sk + n0;
        t.wsum = zt + n0;
        for (m = 0; m < rows; m += VIT__MR) {
            int mr = rows - m < VIT__MR ? rows - m : VIT__MR;
            t.x = x + (size_t)m * ldx;
            t.sx = sq + m;
            vit__att_tiles_i8[mr](&t, ax, m, n0);
        }
    }
}
#endif

#if VIT__DOT_BF16
/* Mode 2's probabilities, rows [0, rows) of q's quads (x, ldx uint32 a row, sq their scales) against K's panels
   (bp, kc quads a key; sk and zt a key's scale and zero-point term, as vit__att_tile_i8 takes them), n keys: the
   scores of MR rows at a time against all keys (ax->sc, in L1 at 197 keys, L2 at 1,370) with each row's max,
   then each row's e = exp(s - max) <= 1, summed to rs (NaN where kbad or the row's scale says a score is NaN, as
   vit__attention_ref's would be), kept in f32 in the maps (att, lda floats a row) if asked for, and rounded to
   u8, round(255 e), into P (ldp bytes a row, the keys past n zero), as P V's x (shifted by xoff as
   vit__xs_fill_n shifts x for the tiles). Exact maxima, not vit__att_exp_v's lazy reference: e on a fixed
   scale of 255 needs e <= 1, and each row is one pass over its scores in L1 after its q kᵀ. The group's maxima
   before its rows and their sums after them are reduced together (vit__v_hred_rows, the same bits): one row's
   reductions had been chains that the next row waited behind (ViT-B/16 I8 at B = 8, one thread, 1.014x, 14 of
   16 alternating rounds). */
static void vit__att_p8_rows(const vit__attx *ax, const uint32_t *x, int ldx, const uint32_t *bp, int kc,
                             const float *sk, const int32_t *zt, const float *sq, int rows, int n, int kbad,
                             unsigned char *P, int ldp, float *rs, float *att, int lda, int xoff) {
    vit__tl t;
    vit__attx g = *ax;
    int n0, m, i, k;
    /* the rows' maxima, and their sums of e and of the bytes, all the group's rows together (vit__v_hred_rows) */
    float mxs[VIT__MR], sums[VIT__MR], qsum[VIT__MR], accv[VIT__MR * VIT__VW], qsv[VIT__MR * VIT__VW];
    memset(&t, 0, sizeof t);
    t.ldx = ldx;
    t.kc = kc;
    for (m = 0; m < rows; m += VIT__MR) {
        int mr = rows - m < VIT__MR ? rows - m : VIT__MR;
        for (i = 0; i < mr; i++) vit__v_store(g.mx + (size_t)i * VIT__VW, vit__v_set1(-FLT_MAX));
        t.x = x + (size_t)m * ldx;
        t.sx = sq + m;
        for (n0 = 0; n0 < n; n0 += VIT__NR) {
            t.nv = n - n0 < VIT__NR ? n - n0 : VIT__NR;
            t.bp = bp + (size_t)n0 * kc;
            t.ws = sk + n0;
            t.wsum = zt + n0;
            vit__att_tiles_i8[mr](&t, &g, m, n0);
        }
        vit__v_hred_rows(mxs, g.mx, mr, 1);
        for (i = 0; i < mr; i++) {
            const float *si = g.sc + (size_t)i * g.lds;
            float *ai = att ? att + (size_t)(m + i) * lda : NULL;
            unsigned char *pi = P + (size_t)(m + i) * ldp;
            vit__vf vm = vit__v_set1(mxs[i]), acc = vit__v_zero();
            vit__vi qs = vit__vi_zero();
            /* 255 e of key k on (the scores in units of log2 e): the keys past n 0 */
#define VIT__E8(k)                                                                                         \
    (n - (k) < VIT__VW ? vit__v_keep(vit__v_exp2_255(vit__v_sub(vit__v_load(si + (k)), vm)), n - (k))         \
                       : vit__v_exp2_255(vit__v_sub(vit__v_load(si + (k)), vm)))
            for (k = 0; k < n; k += 4 * VIT__VW) { /* four vectors of bytes a step (the last's zeros past n) */
                vit__vf e0 = VIT__E8(k), e1 = k + VIT__VW < n ? VIT__E8(k + VIT__VW) : vit__v_zero(),
                        e2 = k + 2 * VIT__VW < n ? VIT__E8(k + 2 * VIT__VW) : vit__v_zero(),
                        e3 = k + 3 * VIT__VW < n ? VIT__E8(k + 3 * VIT__VW) : vit__v_zero();
                vit__vi q0 = vit__v_round(e0), q1 = vit__v_round(e1), q2 = vit__v_round(e2), q3 = vit__v_round(e3);
                acc = vit__v_add(vit__v_add(acc, vit__v_add(e0, e1)), vit__v_add(e2, e3));
                qs = vit__vi_add(vit__vi_add(qs, vit__vi_add(q0, q1)), vit__vi_add(q2, q3));
                if (ai) { /* e itself */
                    int j4;
                    vit__vf ev[4], r255 = vit__v_set1(1.0f / 255.0f);
                    ev[0] = e0; ev[1] = e1; ev[2] = e2; ev[3] = e3;
                    for (j4 = 0; j4 < 4 && k + j4 * VIT__VW < n; j4++)
                        vit__v_store_part(ai + k + j4 * VIT__VW, vit__v_mul(ev[j4], r255),
                                          n - k - j4 * VIT__VW < VIT__VW ? n - k - j4 * VIT__VW : VIT__VW);
                }
                if (k + 4 * VIT__VW <= ldp)
                    vit__vi_store_8x4(pi + k, q0, q1, q2, q3, 1, 255, -xoff);
                else {
                    unsigned char b[4 * VIT__VW];
                    vit__vi_store_8x4(b, q0, q1, q2, q3, 1, 255, -xoff);
                    memcpy(pi + k, b, (size_t)(ldp - k));
                }
            }
#undef VIT__E8
            vit__v_store(accv + (size_t)i * VIT__VW, acc);
            vit__v_store(qsv + (size_t)i * VIT__VW, vit__vi_float(qs));
        }
        vit__v_hred_rows(sums, accv, mr, 0);
        vit__v_hred_rows(qsum, qsv, mr, 0);
        for (i = 0; i < mr; i++) {
            float sum255 = kbad || sq[m + i] != sq[m + i] ? NAN : sums[i];
            /* the weight the rounding left out, on key n (V's mean there) */
            float r = nearbyintf(sum255 - qsum[i]);
            rs[m + i] = sum255 * (1.0f / 255.0f);
            r = r > 255.0f ? 255.0f : r > 0.0f ? r : 0.0f;
            P[(size_t)(m + i) * ldp + n] = (unsigned char)((int)r - xoff);
        }
    }
}

/* V's head (rows of HS values ld apart: vh's bf16, else vf's floats; n keys) for P V in int8 (mode 2): each
   column on its own symmetric scale (vit__q8s_scale of its max |v|, 127; sv, hsp of them, 0 past HS), packed as
   the I8 tiles' panels (vit__pack_weight's: panel n0 of NR columns, k the keys in quads, kp of them, zeros past n
   and HS) into vp, with their column sums a k block (vs, as vit__pack_weight's sums); inv, hsp floats of
   scratch. Four keys' values of VW columns at a time, their bytes into each column's quad in the registers. */
static void vit__att_v8_pack(uint32_t *vp, float *sv, float *inv, int32_t *vs, const float *vf, const uint16_t *vh,
                             int ld, int n, int HS, int kp) {
    int hsp = (HS + VIT__NR - 1) / VIT__NR * VIT__NR, j, c, g, kcb = vit__kc(VIT_DTYPE_I8), k0;
    vit__vi mag = vit__vi_set1(0x7fffffff);
#define VIT__VAL(j, c) \
    vit__bf16_float(vh ? vh[(size_t)(j) * ld + (c)] : vit__bf16_round(vf[(size_t)(j) * ld + (c)]))
#define VIT__VVEC(j, c)                                                                                    \
    (vh ? vit__v_as_f(vit__vi_sll16(vit__vi_load_u16(vh + (size_t)(j) * ld + (c))))                         \
        : vit__v_bf16_float(vit__v_load(vf + (size_t)(j) * ld + (c))))
    /* each column's max |v| as its bits' integer max (non-finite above every finite value's: vit__q8s_row), four
       vectors of a row (its two lines of bf16) a step, the row VIT__ATT_PF ahead asked for: one vector of columns
       down all the rows at a time read each row's lines twice, the first time from L3 (the qkv product's outputs,
       7.3 MB at ViT-B/16's B = 8) with none asked for ahead (perf: a tenth of the softmax task's samples on the
       widening after those loads; ViT-B/16 I8 at B = 8, one thread, 1.007x, 12 of 16 alternating rounds) */
    for (c = 0; c + 4 * VIT__VW <= HS; c += 4 * VIT__VW) {
        vit__vi b0 = vit__vi_zero(), b1 = b0, b2 = b0, b3 = b0;
        float t[VIT__VW];
        int l, q;
        for (j = 0; j < n; j++) {
            if (vh && j + VIT__ATT_PF < n)
                vit__prefetch_row((const float *)(const void *)(vh + (size_t)(j + VIT__ATT_PF) * ld + c), 2 * VIT__VW);
            b0 = vit__vi_max(b0, vit__vi_and(vit__v_as_i(VIT__VVEC(j, c)), mag));
            b1 = vit__vi_max(b1, vit__vi_and(vit__v_as_i(VIT__VVEC(j, c + VIT__VW)), mag));
            b2 = vit__vi_max(b2, vit__vi_and(vit__v_as_i(VIT__VVEC(j, c + 2 * VIT__VW)), mag));
            b3 = vit__vi_max(b3, vit__vi_and(vit__v_as_i(VIT__VVEC(j, c + 3 * VIT__VW)), mag));
        }
        for (q = 0; q < 4; q++) {
            vit__vi b = q == 0 ? b0 : q == 1 ? b1 : q == 2 ? b2 : b3;
            vit__v_store(t, vit__v_as_f(vit__vi_min(b, vit__vi_set1(0x7f800000))));
            for (l = 0; l < VIT__VW; l++)
                sv[c + q * VIT__VW + l] = vit__q8s_scale(t[l], t[l] < INFINITY, 127, &inv[c + q * VIT__VW + l]);
        }
    }
    for (; c + VIT__VW <= HS; c += VIT__VW) {
        vit__vi b = vit__vi_zero();
        float t[VIT__VW];
        int l;
        for (j = 0; j < n; j++) b = vit__vi_max(b, vit__vi_and(vit__v_as_i(VIT__VVEC(j, c)), mag));
        vit__v_store(t, vit__v_as_f(vit__vi_min(b, vit__vi_set1(0x7f800000))));
        for (l = 0; l < VIT__VW; l++) sv[c + l] = vit__q8s_scale(t[l], t[l] < INFINITY, 127, &inv[c + l]);
    }
    for (; c < HS; c++) {
        float amax = 0.0f;
        int finite = 1;
        for (j = 0; j < n; j++) {
            float v = VIT__VAL(j, c);
            finite &= fabsf(v) < INFINITY;
            amax = fabsf(v) > amax ? fabsf(v) : amax;
        }
        sv[c] = vit__q8s_scale(amax, finite, 127, &inv[c]);
    }
    for (; c < hsp; c++) sv[c] = inv[c] = 0.0f;
    /* panel p's quad g, column j: v8[4g .. 4g + 3][p NR + j], a byte each */
    memset(vp, 0, (size_t)hsp * kp);
    for (g = 0; 4 * g < n; g++)
        for (c = 0; c < HS; c += VIT__VW) {
            uint32_t *d = vp + (size_t)(c / VIT__NR) * kp / 4 * VIT__NR + (size_t)g * VIT__NR + c % VIT__NR;
            if (c + VIT__VW <= HS && 4 * g + 4 <= n) {
                vit__vf vi = vit__v_load(inv + c);
                vit__vi q0 = vit__v_round(vit__v_mul(VIT__VVEC(4 * g, c), vi)),
                        q1 = vit__v_round(vit__v_mul(VIT__VVEC(4 * g + 1, c), vi)),
                        q2 = vit__v_round(vit__v_mul(VIT__VVEC(4 * g + 2, c), vi)),
                        q3 = vit__v_round(vit__v_mul(VIT__VVEC(4 * g + 3, c), vi)), ff = vit__vi_set1(255);
                /* |v inv| <= 127 (1 + 3 ulp) rounds within +-127: a byte each, the fields apart (add as or) */
                vit__vi_store(d, vit__vi_add(vit__vi_add(vit__vi_and(q0, ff), vit__vi_sll(vit__vi_and(q1, ff), 8)),
                                             vit__vi_add(vit__vi_sll(vit__vi_and(q2, ff), 16), vit__vi_sll(q3, 24))));
            } else
                for (j = 0; j < VIT__VW && c + j < HS; j++) {
                    uint32_t w = 0;
                    int r;
                    for (r = 0; r < 4 && 4 * g + r < n; r++)
                        w |= (uint32_t)(unsigned char)(signed char)vit__q8s(VIT__VAL(4 * g + r, c + j), inv[c + j], 127)
                             << (8 * r);
                    d[j] = w;
                }
        }
#undef VIT__VAL
#undef VIT__VVEC
    for (c = 0; c < hsp; c += VIT__NR) {
        int32_t *v0 = vs;
        for (k0 = 0; k0 < kp; k0 += kcb, vs += VIT__NR)
            vit__panel_wsum(vs, vp + (size_t)c * kp / 4 + (size_t)k0 / 4 * VIT__NR,
                            (kp - k0 < kcb ? kp - k0 : kcb) / 4);
        for (j = 0; j < VIT__NR; j++) { /* key n: each column's mean */
            int32_t s = 0, mean;
            for (k0 = 0; k0 < kp; k0 += kcb) s += v0[(size_t)(k0 / kcb) * VIT__NR + j];
            mean = (int32_t)nearbyintf((float)s / (float)n);
            vp[(size_t)c * kp / 4 + (size_t)(n / 4) * VIT__NR + j] |= (uint32_t)(unsigned char)(signed char)mean
                                                                      << (8 * (n % 4));
            v0[(size_t)(n / kcb) * VIT__NR + j] += mean;
        }
    }
}
#endif
#endif

/* One attention call: q, k, v (B, N, ld) with head h in columns [h*HS,
   (h+1)*HS), out (B, N, NH*HS), att (B, NH, N, N) or NULL, scores scale *
   q.k, probabilities softmax(scores) * post; split into tasks of `per`
   query rows, nt blocks a head. */
#define VIT__ATT_HELD 64 /* threads whose head vit__att keeps across their claims (vit__att_tasks) */
typedef struct vit__att {
    float *out, *att;
    int ldo;            /* floats between rows of out: NH * HS, or vit__ld_x's (the output projection's x) */
    float *scratch;     /* one slot of vit__att_slot floats per thread */
    const float *q, *k, *v;
    vit_attn_shape s;
    int nt, per;        /* blocks a head, query rows a block */
    int whole;          /* the heads threads claim whole (vit__att_units), or 0 */
    int lowp;           /* vit__att_mode's: 1, both products in BF16; 2, both in int8; 3, q kᵀ in int8 (q on 7
                           bits), P V in f32 */
    int vpack;          /* f32: 1, V packed once a head too (slots of vit__att_slot); 0, not (vit_k_attention's
                           scratch for one head holds K alone: vit__att_slot_v) */
    const float *bias;  /* (NH, R): a relative position bias table per head added to the scores, or NULL */
    const int32_t *bidx; /* (N, N): the entry of a head's table each score adds */
    int R;              /* entries per head */
    float qs;           /* lowp: the scale when a power of two (folded into q), else 1 */
    uint16_t *ob;       /* lowp 1: the output rows rounded to bf16 into ob, ldob uint16 apart (the output
                           projection's x converted: vit__mha_core), out unwritten; else NULL */
    int ldob;
    const uint16_t *qh, *kh, *vh; /* lowp 1: q, k, v as bf16 (rows s.ld uint16 apart: the qkv product's outputs
                                     rounded, vit__mha_core), read in place of q, k, v; lowp 2: q's and k's rows
                                     in int8 at their first bytes (vit__q8_att_out), v's bf16; else NULL */
    const float *q8s;   /* lowp 2 with qh: each row's q and k scales, NH each (vit__mm.yqs) */
    int *held;          /* heldv, set by vit__attention (vit__att_of returns the struct by value) */
    int heldv[VIT__ATT_HELD]; /* slot t's head for t < VIT__ATT_HELD (vit__att_tasks) */
} vit__att;

#if VIT__ATT_Q7
/* Mode 3's q kᵀ and exponentials for rows [i0, i0 + rows) of head bh: K's int8 panels (packed, with V's f32 ones,
   when another head comes), the block's rows of q on 7 bits, the tiles' scores straight to e in ax's att
   (vit__att_tile_i8), each row's sum of e to rs. The slot: V's panels (vsz floats), then vit__att_q7_parts. */
static void vit__att_exp_q7(const vit__att *a, float *slot, size_t vsz, int *held, vit__attx *ax, int bh, int i0,
                            int rows, float *rs) {
    int N = a->s.N, NH = a->s.NH, HS = a->s.HS, ld = a->s.ld, bi = bh / NH, h = bh % NH, hq4 = (HS + 3) / 4, n0, i;
    size_t part[8];
    uint32_t *kp = (uint32_t *)(void *)(slot + vsz), *kt, *qx;
    float *sk, *sq;
    int32_t *zt;
    vit__att_q7_parts(N, HS, a->per + 3, part);
    kt = kp + part[0];
    sk = (float *)(void *)(kt + part[1]);
    zt = (int32_t *)(void *)(sk + part[2]);
    qx = (uint32_t *)(void *)(zt + part[3]);
    sq = (float *)(void *)(qx + part[4]);
    ax->ref = sq + part[5];
    ax->acc = ax->ref + part[6];
    if (*held != bh) {
        const float *kb = a->k + (size_t)bi * N * ld + h * HS;
        for (n0 = 0; n0 < N; n0 += VIT__NR) { /* a key's scale times the scores' in units of log2 e */
            vit__att_k8_panel(kp + (size_t)n0 * hq4, kt, sk + n0, kb, ld, n0, N - n0 < VIT__NR ? N - n0 : VIT__NR, N,
                              HS, a->s.scale * 1.44269504088896341f);
            vit__att_k8_terms(zt + n0, kp + (size_t)n0 * hq4, hq4, 64);
        }
        if (vsz) vit__head_pack(NULL, slot, NULL, a->v + (size_t)bi * N * ld + h * HS, N, HS, ld);
        *held = bh;
    }
    vit__att_q8_rows(qx, sq, a->q + ((size_t)bi * N + i0) * ld + h * HS, ld, rows, HS, 64, 63);
    vit__att_exp_i8(ax, qx, hq4, kp, hq4, sk, zt, sq, rows, N);
    for (i = 0; i < rows; i++) rs[i] = vit__v_hsum(vit__v_load(ax->acc + (size_t)i * VIT__VW));
}
#endif

/* Task t: block t % nt of head t / nt in a thread's slot: K's (and V's) panels of head *held (packed again when
   another head comes), then one block of rows: e = exp(scale q kᵀ - ref) straight from the tiles (vit__att_exp_row)
   into S, P V on e, each output row scaled by post / sum e. (Scores written out, then the softmax's passes: a layer
   of DINOv2-S/14's attention at 518 px 25.8 -> 23.8 ms, of ViT-B/16's 1.18 -> 1.11 ms, one thread on AVX-512;
   AVX2 43.5 -> 41.9 and 1.90 -> 1.86 ms.) Without SIMD: the scores, vit_k_softmax_ref, then P V. */
static void vit__att_task(const vit__att *a, float *slot, int *held, int t) {
    int N = a->s.N, NH = a->s.NH, HS = a->s.HS, ld = a->s.ld;
    int bh = t / a->nt, bi = bh / NH, h = bh % NH, i0 = t % a->nt * a->per,
        rows = t % a->nt == a->nt - 1 ? N - i0 : a->per;
    size_t kpart, kv = vit__att_kv(N, HS, a->vpack, &kpart);
    float *kp = slot, *vp = a->vpack ? slot + kpart : NULL;
    float *S = a->att ? a->att + ((size_t)bh * N + i0) * N : slot + kv;
    float *o = a->out + ((size_t)bi * N + i0) * a->ldo + h * HS;
    const float *qh = a->q + ((size_t)bi * N + i0) * ld + h * HS;
    const float *kh = a->k + (size_t)bi * N * ld + h * HS, *vh = a->v + (size_t)bi * N * ld + h * HS;
    vit__mm mm;
#ifndef VIT_NO_SIMD
    float rs[VIT__ATT_ROWS], ref[VIT__ATT_SUB], acc[VIT__ATT_SUB * VIT__VW];
    vit__attx ax;
    int i;
    VIT_ASSERT(rows <= VIT__ATT_ROWS);
    ax.p = NULL;
    ax.ldp = 0;
    ax.lda = N;
    ax.ref = ref;
    ax.acc = acc;
    ax.alpha = 1.0f; /* the tiles scale */
    ax.bt = a->bias ? a->bias + (size_t)h * a->R : NULL;
    ax.bidx = a->bias ? a->bidx + (size_t)i0 * N : NULL;
#if VIT__ATT_Q7
    if (a->lowp == 3) {
        size_t part[8];
        vp = a->vpack ? slot : NULL;
        if (!a->att) S = slot + (kv - kpart) + vit__att_q7_parts(N, HS, a->per + 3, part);
        ax.att = S;
        vit__att_exp_q7(a, slot, kv - kpart, held, &ax, bh, i0, rows, rs);
    } else
#endif
    {
        if (*held != bh) {
            vit__head_pack(kp, vp, kh, vh, N, HS, ld);
            *held = bh;
        }
        ax.att = S;
        vit__att_exp_f32(&ax, qh, ld, kp, kh, ld, HS, rows, N, a->s.scale * 1.44269504088896341f, rs);
    }
#else
    int j;
    (void)kp; (void)vp; (void)held;
    mm = vit__mm_dense(S, qh, kh, NULL, rows, HS, N);
    mm.ldw = ld; mm.ldx = ld; mm.alpha = a->s.scale; mm.threaded = 0; mm.blocked_rows = 1;
    vit__matmul(&mm);
    if (a->bias) vit_k_relpos_add(S, a->bias + (size_t)h * a->R, a->bidx + (size_t)i0 * N, rows, N);
    vit_k_softmax_ref(S, S, rows, N);
    if (a->s.post != 1.0f)
        for (j = 0; j < rows * N; j++) S[j] *= a->s.post;
#endif

    /* out = S v: v's packed panels, and a last partial one read as (N, HS) rows where it lies (vit__mm.nn:
       its panels are its rows, so packing is a copy) */
    mm = vit__mm_dense(o, S, vh, NULL, rows, N, HS);
    mm.ldw = ld; mm.nn = 1; mm.ldy = a->ldo; mm.threaded = 0; mm.blocked_rows = 1;
#ifndef VIT_NO_SIMD
    if (vp) { mm.wq = vp; mm.panel = VIT__NR; }
#endif
    vit__matmul(&mm);

#ifndef VIT_NO_SIMD
    for (i = 0; i < rows; i++)
        vit__att_row_end(o + (size_t)i * a->ldo, HS, a->att ? S + (size_t)i * N : NULL, N, rs[i], a->s.post);
#endif
}

#if VIT__DOT_BF16
/* BF16 q kᵀ's tile: mr rows of q's pairs (x, ldx) against one panel of K's (bp, kc pairs of NR keys, n0 the
   first; a partial panel's are zero past its keys), all of kc in the registers, the scores straight into rows
   [m, m + mr) of the softmax state (vit__att_exp_v; as vit__att_tile_i8, which says why). */
static VIT__INLINE void vit__att_tile_bf16(const int mr, const vit__tl *t, const vit__attx *ax, int m, int n0) {
    const uint32_t *x = t->x, *bp = t->bp;
    int g, i, ldx = t->ldx, kc = t->kc, nv = t->nv;
    float acc[12][VIT__NR]; /* the sums leave the registers before the exponentials, as vit__att_tile_i8's */
#define VIT__DECL_F(i) vit__vf c##i##a = vit__v_zero(), c##i##b = vit__v_zero();
    VIT__ROWS(VIT__DECL_F)
#undef VIT__DECL_F
    for (g = 0; g < kc; g++) {
        vit__vi b0 = vit__vi_load(bp + (size_t)g * VIT__NR), b1 = vit__vi_load(bp + (size_t)g * VIT__NR + VIT__VW);
#define VIT__STEP(i)                                                   \
        if (mr > i) {                                                  \
            vit__vi a = vit__vi_set1((int32_t)x[(size_t)i * ldx + g]); \
            c##i##a = vit__v_dpbf16(c##i##a, a, b0);                   \
            c##i##b = vit__v_dpbf16(c##i##b, a, b1);                   \
        }
        VIT__ROWS(VIT__STEP)
#undef VIT__STEP
    }
#define VIT__SAVE(i)                               \
    if (mr > i) {                                  \
        vit__v_store(acc[i], c##i##a);             \
        vit__v_store(acc[i] + VIT__VW, c##i##b);   \
    }
    VIT__ROWS(VIT__SAVE)
#undef VIT__SAVE
    for (i = 0; i < mr; i++) vit__att_exp_v(ax, vit__v_load(acc[i]), vit__v_load(acc[i] + VIT__VW), m + i, n0, nv, 1);
}
VIT__MRS(VIT__ATT_DEF, vit__att_tile_bf16)
static const vit__att_fn vit__att_tiles_bf16[VIT__MR + 1] = {NULL, VIT__MRS(VIT__ATT_FN, vit__att_tile_bf16)};

#if VIT__WIDE
/* The same on two panels of keys, six rows (as the dense layers' wide tiles, vit__tile2_bf16): the MR x NR tile
   broadcasts twelve of q a step for its 24 products, this one six, and a row's scores of both panels go to its
   softmax state in one pass (vit__att_exp_v2). Each sum takes the MR x NR tile's steps, and a row's panels go in
   order: the same bits. BF16's attention at 518 px, one layer on Zen 4: 15.8-16.0 -> 15.2-15.5 ms. (I8's
   q kᵀ, 16 steps of vpdpbusd where BF16's has 32 of vdpbf16ps, measured no faster this way.) bq is the second
   panel, t->nv its keys (the first is whole). */
static VIT__INLINE void vit__att_tile2_bf16(const int mr, const vit__tl *t, const uint32_t *bq, const vit__attx *ax,
                                            int m, int n0) {
    const uint32_t *x = t->x, *bp = t->bp;
    int g, i, ldx = t->ldx, nv = t->nv;
    float acc[6][2 * VIT__NR];
    VIT__ROWS2(VIT__DECL2F)
#define VIT__DOT2 vit__v_dpbf16
    VIT__LOOP2(;)
#undef VIT__DOT2
#define VIT__SAVE2(i)                                       \
    if (mr > i) {                                           \
        vit__v_store(acc[i], c##i##a);                      \
        vit__v_store(acc[i] + VIT__VW, c##i##b);            \
        vit__v_store(acc[i] + VIT__NR, c##i##c);            \
        vit__v_store(acc[i] + VIT__NR + VIT__VW, c##i##d);  \
    }
    VIT__ROWS2(VIT__SAVE2)
#undef VIT__SAVE2
    for (i = 0; i < mr; i++) {
        const float *r = acc[i];
        if (n0)
            vit__att_exp_v2(ax, vit__v_load(r), vit__v_load(r + VIT__VW), vit__v_load(r + VIT__NR),
                            vit__v_load(r + VIT__NR + VIT__VW), m + i, n0, nv);
        else { /* the first panel sets the row's reference */
            vit__att_exp_v(ax, vit__v_load(r), vit__v_load(r + VIT__VW), m + i, n0, VIT__NR, 1);
            vit__att_exp_v(ax, vit__v_load(r + VIT__NR), vit__v_load(r + VIT__NR + VIT__VW), m + i, n0 + VIT__NR,
                           nv, 1);
        }
    }
}
typedef void (*vit__att2_fn)(const vit__tl *t, const uint32_t *bq, const vit__attx *ax, int m, int n0);
#define VIT__ATT2_DEF(f, mr)                                                                         \
    static void f##_##mr(const vit__tl *t, const uint32_t *bq, const vit__attx *ax, int m, int n0) { \
        f(mr, t, bq, ax, m, n0);                                                                     \
    }
VIT__MRS2(VIT__ATT2_DEF, vit__att_tile2_bf16)
#undef VIT__ATT2_DEF
static const vit__att2_fn vit__att_tiles2_bf16[7] = {NULL, VIT__MRS2(VIT__TL2_ENTRY, vit__att_tile2_bf16)};
#endif

/* q kᵀ for rows [0, rows) of x (stride ldx uint32, kc pairs) against the panels in bp (pst x NR each, n keys in
   all) on the vdpbf16ps tiles, into the softmax state: MR x NR blocks of scores. */
static void vit__att_exp_tiles(const vit__attx *ax, const uint32_t *x, int ldx, const uint32_t *bp, int kc, int pst,
                               int rows, int n) {
    vit__tl t;
    int n0, m;
    memset(&t, 0, sizeof t);
    t.ldx = ldx;
    t.kc = kc;
    for (n0 = 0; n0 < n; n0 += VIT__NR) {
        t.nv = n - n0 < VIT__NR ? n - n0 : VIT__NR;
        t.bp = bp + (size_t)n0 * pst;
#if VIT__WIDE
        if (n0 + VIT__NR < n) { /* this whole panel and the next */
            t.nv = n - n0 - VIT__NR < VIT__NR ? n - n0 - VIT__NR : VIT__NR;
            for (m = 0; m < rows; m += 6) {
                t.x = x + (size_t)m * ldx;
                vit__att_tiles2_bf16[rows - m < 6 ? rows - m : 6](&t, t.bp + (size_t)VIT__NR * pst, ax, m, n0);
            }
            n0 += VIT__NR;
            continue;
        }
#endif
        for (m = 0; m < rows; m += VIT__MR) {
            int mr = rows - m < VIT__MR ? rows - m : VIT__MR;
            t.x = x + (size_t)m * ldx;
            vit__att_tiles_bf16[mr](&t, ax, m, n0);
        }
    }
}

#if VIT__AMX
/* The same on the AMX tiles, 32 x 32 blocks, all of kc (a multiple of 16, the pairs past the data zero in x and
   bp: vit__att_pad) at once; x's rows zero up to a multiple of 16. The caller has loaded the tiles'
   configuration (vit__att_task_bf16). */
static void vit__att_exp_amx(const vit__attx *ax, const uint32_t *x, int ldx, const uint32_t *bp, int kc, int rows,
                             int n) {
    float pbuf[32 * VIT__NR + 16], *pad = (float *)(((uintptr_t)pbuf + 63) & ~(uintptr_t)63);
    int n0, m, r;
    for (n0 = 0; n0 < n; n0 += VIT__NR) {
        int nv = n - n0 < VIT__NR ? n - n0 : VIT__NR;
        for (m = 0; m < rows; m += 32) {
            int mr = rows - m < 32 ? rows - m : 32;
            _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
            vit__amx_dot_ld(VIT_DTYPE_BF16, x, (size_t)ldx, bp + (size_t)n0 * kc, 0, 2 * kc, m, mr > 16, NULL, 0, NULL,
                            0);
            _tile_stored(0, pad, VIT__NR * 4); _tile_stored(1, pad + 16, VIT__NR * 4);
            if (mr > 16) {
                _tile_stored(2, pad + 16 * VIT__NR, VIT__NR * 4);
                _tile_stored(3, pad + 16 * VIT__NR + 16, VIT__NR * 4);
            }
            for (r = 0; r < mr; r++) vit__att_exp_row(ax, pad + (size_t)r * VIT__NR, m + r, n0, nv, 1);
        }
    }
}
#endif


/* Task t as vit__att_task, with both products in BF16 pairs on vdpbf16ps:
   the same roundings as the BF16 dense layers (q, k, the probabilities and
   v to bf16, sums in f32; scores and softmax f32); lowp 2 (vit__att_mode),
   q kᵀ in int8 quads on vpdpbusd and P V on the I8 tiles (vit__att_p8_rows,
   vit__att_v8_pack). The head's K and V go straight into the tiles' panels
   when the head changes: V's pairs (BF16) or quads (I8) of keys are its
   rows interleaved, so it needs no transpose. */
static void vit__att_task_bf16(const vit__att *a, float *slot, int *held, int t) {
    int N = a->s.N, NH = a->s.NH, HS = a->s.HS, ld = a->s.ld, i, j, g, n0;
    int bh = t / a->nt, bi = bh / NH, h = bh % NH, i0 = t % a->nt * a->per,
        rows = t % a->nt == a->nt - 1 ? N - i0 : a->per, hq = (HS + 1) / 2, hv = (N + 1) / 2;
    int hqp = (int)vit__att_pad((size_t)hq), hvp = (int)vit__att_pad((size_t)hv); /* pairs a row or panel holds */
    int hvr = (int)vit__att_prow((size_t)N);                                        /* pairs a row of P holds */
    int hq4 = (HS + 3) / 4, keys = (N + VIT__NR - 1) / VIT__NR * VIT__NR;          /* I8: quads a row of q or k */
#if VIT__DOT_I8
    int qxl = hq4;              /* I8: q kᵀ's rows of q, qin, uint32 apart */
    const uint32_t *qin = NULL; /* qx, or the qkv product's own (vit__q8_att_out) */
    int hsp = (HS + VIT__NR - 1) / VIT__NR * VIT__NR, kq = (N + 4) / 4 * 4; /* mode 2's P V: V's columns, P's bytes */
#endif
    size_t part[9];
    uint32_t *kp = (uint32_t *)(void *)slot, *vp, *kt, *qx, *px;
    float *S, qs, *rs, *o, *sk, *sq, *p8; /* p8: part[8] (vit__att_lowp_parts) */
    int32_t *zt;
    int ldo = a->ob ? HS : a->ldo;
    vit__attx ax;
    vit__mm mm;
    vit__att_lowp_parts(N, HS, a->per + 3, part);
    vp = kp + part[0]; kt = vp + part[1]; qx = kt + part[2]; px = qx + part[3];
    rs = (float *)(void *)(px + part[4]);
    sk = rs + part[5]; zt = (int32_t *)(void *)(sk + keys); sq = (float *)(void *)(zt + keys);
    o = a->ob ? sk + part[6] : a->out + ((size_t)bi * N + i0) * a->ldo + h * HS;
    p8 = sk + part[6] + part[7];
    S = a->att ? a->att + ((size_t)bh * N + i0) * N : NULL;
#if !VIT__DOT_I8 /* AVX-512 with BF16 but not VNNI */
    (void)hq4; (void)sq; (void)p8;
#endif
    if (*held != bh) {
        const float *kb = a->kh ? NULL : a->k + (size_t)bi * N * ld + h * HS,
                    *vb = a->vh ? NULL : a->v + (size_t)bi * N * ld + h * HS;
        for (n0 = 0; n0 < N; n0 += VIT__NR) {
            int nv = N - n0 < VIT__NR ? N - n0 : VIT__NR;
#if VIT__DOT_I8
            if (a->lowp == 2) { /* K's rows in int8, quads a key; a key's scale (times q kᵀ's, in units of log2 e:
                                   vit__att_p8_rows takes 2^s) and zero-point term */
                float s2 = a->s.scale * 1.44269504088896341f;
                if (a->kh) { /* in int8 already: packed where they lie */
                    const uint16_t *kr = a->kh + ((size_t)bi * N + n0) * ld;
                    for (j = 0; j < VIT__NR; j++)
                        sk[n0 + j] = j < nv ? a->q8s[((size_t)bi * N + n0 + j) * 2 * NH + NH + h] * s2 : 0.0f;
                    for (j = VIT__NR; j < 2 * VIT__NR && n0 + j < N; j++) /* the next panel's */
                        VIT__PREFETCH(kr + (size_t)j * ld + h * HS / 2);
                    vit__pack_panel_u32(kp + (size_t)n0 * hq4, (const unsigned char *)kr + (size_t)h * HS,
                                        (size_t)ld * 2, nv, hq4 * 4);
                } else
                    vit__att_k8_panel(kp + (size_t)n0 * hq4, kt, sk + n0, kb, ld, n0, nv, N, HS, s2);
                vit__att_k8_terms(zt + n0, kp + (size_t)n0 * hq4, hq4, 128 - VIT__I8_XOFF);
                continue;
            }
#endif
            if (a->kh) { /* K's rows already bf16 (HS even: this head's pairs alone), packed where they lie, the
                            next panel's asked for first */
                const uint16_t *kr = a->kh + ((size_t)bi * N + n0) * ld + h * HS;
                for (j = VIT__NR; j < 2 * VIT__NR && n0 + j < N; j++)
                    vit__prefetch_row((const float *)(const void *)(kr + (size_t)j * ld), HS / 2);
                vit__pack_panel_u32(kp + (size_t)n0 * hqp, (const unsigned char *)kr, (size_t)ld * 2, nv, hq * 4);
            } else {
                for (j = 0; j < nv; j++) {
                    if (n0 + j + VIT__ATT_PF < N) vit__prefetch_row(kb + (size_t)(n0 + j + VIT__ATT_PF) * ld, HS);
                    vit__bf16_row((uint16_t *)(void *)(kt + (size_t)j * hq), kb + (size_t)(n0 + j) * ld, HS);
                }
                vit__pack_panel_u32(kp + (size_t)n0 * hqp, (const unsigned char *)kt, (size_t)hq * 4, nv, hq * 4);
            }
            memset(kp + (size_t)n0 * hqp + (size_t)hq * VIT__NR, 0, (size_t)(hqp - hq) * VIT__NR * 4);
        }
#if VIT__DOT_I8
        if (a->lowp == 2) { /* V in int8 for P V (p8: the scratch after the scores and maxima) */
            float *sv = p8 + (size_t)VIT__MR * keys + (size_t)VIT__MR * VIT__VW;
            vit__att_v8_pack(vp, sv, sv + hsp, (int32_t *)(void *)(sv + 2 * hsp), vb,
                             a->vh ? a->vh + (size_t)bi * N * ld + h * HS : NULL, ld, N, HS, kq);
        } else
#endif
        /* V's panel n0, pair g, column j: the low half v[2g][n0 + j], the high half v[2g + 1][n0 + j] */
        for (n0 = 0; n0 < HS; n0 += VIT__NR) {
            int nv = HS - n0 < VIT__NR ? HS - n0 : VIT__NR, nw = nv / VIT__VW * VIT__VW;
            uint32_t *dst = vp + (size_t)n0 * hvp;
            memset(dst + (size_t)hv * VIT__NR, 0, (size_t)(hvp - hv) * VIT__NR * 4);
            if (a->vh) /* V already bf16: its rows' halves interleaved */
                for (g = 0; g < hv; g++, dst += VIT__NR) {
                    const uint16_t *lo = a->vh + ((size_t)bi * N + 2 * g) * ld + h * HS + n0,
                                   *hi = 2 * g + 1 < N ? lo + ld : NULL;
                    if (2 * g + VIT__ATT_PF + 1 < N) {
                        vit__prefetch_row((const float *)(const void *)(lo + (size_t)VIT__ATT_PF * ld), nv / 2);
                        vit__prefetch_row((const float *)(const void *)(lo + (size_t)(VIT__ATT_PF + 1) * ld), nv / 2);
                    }
                    for (j = 0; j < nw; j += VIT__VW) {
                        vit__vi l = vit__vi_load_u16(lo + j);
                        if (hi) l = vit__vi_add(l, vit__vi_sll16(vit__vi_load_u16(hi + j)));
                        vit__vi_store(dst + j, l);
                    }
                    for (; j < VIT__NR; j++) dst[j] = j < nv ? lo[j] | (hi ? (uint32_t)hi[j] << 16 : 0u) : 0u;
                }
            else
                for (g = 0; g < hv; g++, dst += VIT__NR) {
                    const float *lo = vb + (size_t)2 * g * ld + n0, *hi = 2 * g + 1 < N ? lo + ld : NULL;
                    if (2 * g + VIT__ATT_PF + 1 < N) {
                        vit__prefetch_row(lo + (size_t)VIT__ATT_PF * ld, nv);
                        vit__prefetch_row(lo + (size_t)(VIT__ATT_PF + 1) * ld, nv);
                    }
                    for (j = 0; j < nw; j += VIT__VW) {
                        vit__vi l = vit__vi_srl16(vit__v_bf16_bits(vit__v_load(lo + j)));
                        if (hi) l = vit__vi_add(l, vit__vi_and(vit__v_bf16_bits(vit__v_load(hi + j)),
                                                              vit__vi_set1((int32_t)0xffff0000u)));
                        vit__vi_store(dst + j, l);
                    }
                    for (; j < VIT__NR; j++) {
                        uint32_t l = j < nv ? vit__bf16_round(lo[j]) : 0u;
                        dst[j] = l | (j < nv && hi ? (uint32_t)vit__bf16_round(hi[j]) << 16 : 0u);
                    }
                }
        }
        *held = bh;
    }

    /* S = scale * q k^T. A scale that is a power of two (1/8 at 64 a head) goes into q as it is rounded: bf16(q
       scale) is bf16(q) scale exactly, and so is every partial sum (bar underflow past 1e-38), so the tiles'
       scores go to S as they are, without a pass that scales them. I8: each row of q in int8 on its scale. */
    qs = a->qs;
#if VIT__DOT_I8
    qin = qx;
    if (a->lowp == 2 && a->qh) { /* q's rows in int8 already: read where they lie */
        qin = (const uint32_t *)(const void *)((const unsigned char *)(a->qh + ((size_t)bi * N + i0) * ld) +
                                               (size_t)h * HS);
        qxl = ld / 2;
        for (i = 0; i < rows; i++) sq[i] = a->q8s[((size_t)bi * N + i0 + i) * 2 * NH + h];
    } else if (a->lowp == 2)
        vit__att_q8_rows(qx, sq, a->q + ((size_t)bi * N + i0) * ld + h * HS, ld, rows, HS, 128 - VIT__I8_XOFF, 127);
    else
#endif
    {
        for (i = 0; i < rows; i++) { /* q qs rounded to bf16 (times 1 when the scale stays for the tiles: exact) */
            uint16_t *qh = (uint16_t *)(void *)(qx + (size_t)i * hqp);
            if (a->qh) { /* bf16 already: times qs, a power of two, is exact (bf16(q) qs = bf16(q qs)) */
                const uint16_t *qb = a->qh + ((size_t)bi * N + i0 + i) * ld + h * HS;
                if (i + VIT__ATT_PF < rows)
                    vit__prefetch_row((const float *)(const void *)(qb + (size_t)VIT__ATT_PF * ld), HS / 2);
                for (j = 0; j + VIT__VW <= HS; j += VIT__VW)
                    vit__v_store_bf16(qh + j, vit__v_mul(vit__v_as_f(vit__vi_sll16(vit__vi_load_u16(qb + j))),
                                                         vit__v_set1(qs)));
                for (; j < HS; j++) qh[j] = vit__bf16_round(vit__bf16_float(qb[j]) * qs);
            } else {
                const float *qi = a->q + ((size_t)bi * N + i0 + i) * ld + h * HS;
                if (i + VIT__ATT_PF < rows) vit__prefetch_row(qi + (size_t)VIT__ATT_PF * ld, HS);
                for (j = 0; j + VIT__VW <= HS; j += VIT__VW)
                    vit__v_store_bf16(qh + j, vit__v_mul(vit__v_load(qi + j), vit__v_set1(qs)));
                for (; j < HS; j++) qh[j] = vit__bf16_round(qi[j] * qs);
            }
            if (HS & 1) qh[HS] = 0;
            memset(qx + (size_t)i * hqp + hq, 0, (size_t)(hqp - hq) * 4);
        }
        memset(qx + (size_t)rows * hqp, 0, (vit__att_pad((size_t)rows) - (size_t)rows) * (size_t)hqp * 4);
    }
    /* Each row's exponentials go to pairs unnormalised (vit__att_exp_row; scaling P V's rows after, the lowp
       attention at 197 tokens went 0.65 -> 0.60 ms a layer of ViT-B/16). Kept maps get softmax * post as the
       f32 path's, the outputs the same bits with or without them. */
    ax.p = (uint16_t *)(void *)px;
    ax.ldp = 2 * hvr;
    ax.att = a->att ? S : NULL;
    ax.lda = N;
    ax.ref = rs + rows;
    ax.acc = rs + 2 * rows;
    ax.alpha = a->lowp == 2 ? 1.0f : a->s.scale / qs; /* I8: the tiles scale */
    ax.bt = a->bias ? a->bias + (size_t)h * a->R : NULL;
    ax.bidx = a->bias ? a->bidx + (size_t)i0 * N : NULL;
#if VIT__DOT_I8
    if (a->lowp == 2) { /* P in u8, V in int8, their product on the I8 tiles */
        unsigned char *P = (unsigned char *)(void *)px;
        int kcb = vit__kc(VIT_DTYPE_I8);
        float *sv = p8 + (size_t)VIT__MR * keys + (size_t)VIT__MR * VIT__VW,
              *sxs = (float *)(void *)(P + (size_t)rows * kq),
              *y = HS == hsp ? o : sv + 2 * hsp + (size_t)hsp * ((kq + kcb - 1) / kcb); /* whole panels' outputs */
        int32_t *zps = (int32_t *)(void *)(sxs + rows);
        int kbad = 0;
        for (j = 0; j < N; j++) kbad |= sk[j] != sk[j];
        ax.sc = p8;
        ax.mx = p8 + (size_t)VIT__MR * keys;
        ax.lds = keys;
        vit__att_p8_rows(&ax, qin, qxl, kp, hq4, sk, zt, sq, rows, N, kbad, P, kq, rs, S, N, VIT__I8_XOFF);
        /* each row's scale post / (255 sum e): P V's outputs come out normalised */
        for (i = 0; i < rows; i++) {
            sxs[i] = a->s.post / (255.0f * rs[i]);
            zps[i] = 0;
        }
        mm = vit__mm_dense(y, NULL, NULL, NULL, rows, kq, hsp);
        mm.ldy = HS == hsp ? ldo : hsp; mm.threaded = 0; mm.blocked_rows = 1;
        mm.wt = VIT_DTYPE_I8; mm.wq = vp; mm.ws = sv; mm.wsums = (const int32_t *)(const void *)(sv + 2 * hsp);
        mm.panel = VIT__NR; mm.xmax = 255;
        mm.xs = P; mm.xs_ld = kq / 4;
        vit__matmul(&mm);
        for (i = 0; i < rows; i++) {
            float *oi = o + (size_t)i * ldo;
            if (y != o) memcpy(oi, y + (size_t)i * hsp, (size_t)HS * sizeof(float));
            if (a->att) vit__att_row_end(oi, 0, S + (size_t)i * N, N, rs[i], a->s.post); /* the maps alone */
            if (a->ob) vit__bf16_row(a->ob + ((size_t)bi * N + i0 + i) * a->ldob + h * HS, oi, HS);
        }
        return;
    }
#endif
#if VIT__AMX
    if (rows >= 16 && vit__amx_ready()) { /* the tiles' configuration is this thread's while it runs, as a
                                             product's (vit__gemm_amx_panels) */
        vit__amx_config();
        vit__att_exp_amx(&ax, qx, hqp, kp, hqp, rows, N);
        _tile_release();
    } else
#endif
        vit__att_exp_tiles(&ax, qx, hqp, kp, hq, hqp, rows, N);
    for (i = 0; i < rows; i++) rs[i] = vit__v_hsum(vit__v_load(ax.acc + (size_t)i * VIT__VW));
    memset(px + (size_t)rows * hvr, 0, (vit__att_pad((size_t)rows) - (size_t)rows) * (size_t)hvr * 4);

    /* out = (e v) * post / sum e: the GEMM's driver (the AMX or vdpbf16ps tiles as for any BF16 product), over
       the rows of e as pairs (its x converted: stride hvr, rows zero to whole tiles) and V's panels (all packed,
       the last one's columns past HS zero), k the pairs of keys as V's panels hold them */
    mm = vit__mm_dense(o, NULL, NULL, NULL, rows, 2 * hvp, HS);
    mm.ldy = ldo; mm.threaded = 0; mm.blocked_rows = 1;
    mm.wt = VIT_DTYPE_BF16; mm.wq = vp; mm.panel = VIT__NR; mm.tail = 1;
    mm.xs = px; mm.xs_ld = hvr;
    vit__matmul(&mm);
    for (i = 0; i < rows; i++) {
        vit__att_row_end(o + (size_t)i * ldo, HS, a->att ? S + (size_t)i * N : NULL, N, rs[i], a->s.post);
        if (a->ob) /* as the output projection would convert it (HS even: whole pairs of this head's) */
            vit__bf16_row(a->ob + ((size_t)bi * N + i0 + i) * a->ldob + h * HS, o + (size_t)i * HS, HS);
    }
}
#endif
#undef VIT__ATT_DEF
#undef VIT__ATT_FN
#if VIT__WIDE /* the wide tiles' sums and k loop: the dense ones' and vit__att_tile2_bf16's */
#undef VIT__DECL2F
#undef VIT__STEP2
#undef VIT__LOOP2
#endif

/* Tasks [t0, t1) in scratch slot `thread`, whose head (the one whose K and V it holds, -1: none) the first
   VIT__ATT_HELD slots keep from one claim of a call to the next, so that each packs a head's K and V once, not
   once a claim: two threads claim a few tasks in turn, and at 518 px a head is 17 tasks (DINOv2-S/14 I8 on two
   threads, the best of 7 passes in six alternating runs: 0.193-0.207 -> 0.187-0.201 s). */
static void vit__att_tasks(const void *ctx, int t0, int t1, int thread) {
    const vit__att *a = (const vit__att *)ctx;
    int N = a->s.N, HS = a->s.HS, t, mine = -1, *held = thread < VIT__ATT_HELD ? a->held + thread : &mine;
    float *vth = a->scratch + (size_t)thread * vit__att_slot_v(N, HS, a->att != NULL, a->lowp, a->vpack);
#if VIT__DOT_BF16
    if (a->lowp) {
        for (t = t0; t < t1; t++) vit__att_task_bf16(a, vth, held, t);
        return;
    }
#endif
    for (t = t0; t < t1; t++) vit__att_task(a, vth, held, t);
}

/* Units [u0, u1) (vit__attention says when): the first `whole` are heads, each a run of its nt tasks, the rest
   the last heads' tasks one by one. A unit's tasks follow the one before's, so a range of units is one of tasks. */
static int vit__att_unit_task(const vit__att *a, int u) {
    return u <= a->whole ? u * a->nt : a->whole * a->nt + (u - a->whole);
}
static void vit__att_units(const void *ctx, int u0, int u1, int thread) {
    const vit__att *a = (const vit__att *)ctx;
    vit__att_tasks(ctx, vit__att_unit_task(a, u0), vit__att_unit_task(a, u1), thread);
}

/* scratch: `slots` slots of vit__att_slot(N, HS, att != NULL, lowp)
   floats; at most `slots` threads run. */
static void vit__attention(vit__att *a, float *scratch, int slots) {
    int N = a->s.N, HS = a->s.HS, t, threads = vit__busy_threads(2.0 * a->s.B * a->s.NH * N * N * HS, VIT__BUSY_ATT);
    a->lowp = vit__att_mode(a->lowp);
    vit__att_tiles(N, a->lowp, &a->nt, &a->per);
    a->scratch = scratch;
    if (threads > slots) threads = slots;
    if ((double)a->s.B * a->s.NH * N * N * HS < 65536.0) threads = 1;
    a->held = a->heldv;
    for (t = 0; t < VIT__ATT_HELD; t++) a->held[t] = -1;
    /* Heads in blocks of rows (nt > 1), enough of them for three a thread: threads claim whole heads, so that each
       head's K and V are packed once, not by every thread whose claims met it; but the last `threads` heads a block
       of rows at a time, so that a thread done early takes a share of the heads still running, not waits for them
       (whole heads to the end, DINOv2-S/14's 6 on two threads, left one thread idle for up to a head a layer on a
       Zen 3 whose two vCPUs run at uneven speeds). One layer's f32 attention at 518 px there, two threads, two runs
       of 30 alternating triples: 0.96x and 0.90x whole heads' time in the medians (faster in 44 of 60), claims of
       blocks throughout 0.99x and 0.91x (those pack K and V in each thread for nearly every head); an I8 file's
       (q kᵀ in int8, mode 3) 0.96x, faster in 19 of 30. The same bits. */
    a->whole = 0;
    if (threads > 1 && a->nt > 1 && a->s.B * a->s.NH >= 3 * threads) {
        a->whole = a->s.B * a->s.NH - threads;
        vit__parallel(a->whole + threads * a->nt, threads, vit__att_units, a);
    } else
        vit__parallel(a->s.B * a->s.NH * a->nt, threads, vit__att_tasks, a);
}

static vit__att vit__att_of(float *out, float *att, const float *q, const float *k, const float *v,
                            const vit_attn_shape *s) {
    vit__att a;
    int e;
    a.out = out; a.ldo = s->NH * s->HS; a.att = att; a.scratch = NULL; a.q = q; a.k = k; a.v = v;
    a.s = *s;
    a.nt = a.per = a.whole = 0;
    a.lowp = 0;
    a.vpack = 1;
    a.bias = NULL;
    a.bidx = NULL;
    a.R = 0;
    a.qs = frexpf(s->scale, &e) == 0.5f ? s->scale : 1.0f;
    a.ob = NULL;
    a.ldob = 0;
    a.qh = a.kh = a.vh = NULL;
    a.q8s = NULL;
    a.held = NULL; /* heldv: set by vit__attention */
    return a;
}

/* The sizes of self-attention on x (B, N, ld) with q, k, v at columns
   0, C and 2C of each row (a fused qkv), or all three x itself. */
static vit_attn_shape vit__attn_shape(int B, int N, int NH, int HS, int ld, float scale, float post) {
    vit_attn_shape s;
    s.B = B; s.N = N; s.NH = NH; s.HS = HS; s.ld = ld; s.scale = scale; s.post = post;
    return s;
}

/* vt holds B * NH * HS * N floats: a slot of a head's K and V packed for
   every two heads, or of K alone for each (then V is copied per block). */
VITDEF void vit_k_attention(float *out, float *att, float *vt, const float *q, const float *k, const float *v,
                            const vit_attn_shape *s) {
    vit__att a = vit__att_of(out, att, q, k, v, s);
    size_t heads = (size_t)s->B * s->NH, total = heads * s->HS * s->N, slot = vit__att_slot(s->N, s->HS, 1, 0), n;
    VIT_ASSERT(att != NULL);
    if (slot > total) {
        a.vpack = 0;
        slot = vit__att_slot_v(s->N, s->HS, 1, 0, 0);
    }
    /* at least one slot: with N and HS under a panel nothing is packed, and the 16 floats asked for go unused */
    n = total / slot;
    vit__attention(&a, vt, n < 1 ? 1 : n > heads ? (int)heads : (int)n);
}

/* ---- kernels: reverse pass ---- */
/* The chain rule through each forward kernel, for the explanations'
   reverse pass (vit_model_reverse). The fast versions sum in other orders
   than their _ref (vectors, the GEMM's k blocks): |fast - ref| is rounding
   only, and every output is summed in one order whatever the thread count.
   The activations' derivatives use the forward's approximations (erfc as
   A&S 7.1.26, vit__v_exp): |fast - ref| <= ~2e-7 * (1 + |x|) |dy|. */

VITDEF void vit_k_layernorm_back_ref(float *dx, const float *x, const float *w, const float *dy, int rows, int C,
                                     float eps) {
    int r, i;
    for (r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * C, *gr = dy + (size_t)r * C;
        float *dr = dx + (size_t)r * C, mean, rstd = vit__row_rstd_ref(xr, C, eps, &mean), mg = 0.0f, mgx = 0.0f;
        /* g = dy w; dx = rstd (g - mean(g) - xh mean(g xh)), xh = (x - mean) rstd */
        for (i = 0; i < C; i++) {
            mg += gr[i] * w[i];
            mgx += gr[i] * w[i] * (xr[i] - mean) * rstd;
        }
        mg /= (float)C;
        mgx /= (float)C;
        for (i = 0; i < C; i++) dr[i] += rstd * (gr[i] * w[i] - mg - (xr[i] - mean) * rstd * mgx);
    }
}

/* act'(x) of a vit_act, as vit__act1 computes act. */
static float vit__act_d1(float x, int act) {
    float s, t, u;
    switch (act) {
    case VIT_ACT_GELU: /* Phi(x) + x phi(x) */
        return 0.5f * (1.0f + erff(x * 0.70710678118654752f)) + x * 0.39894228040143268f * expf(-0.5f * x * x);
    case VIT_ACT_RELU: return x > 0.0f ? 1.0f : 0.0f;
    case VIT_ACT_GELU_TANH:
        u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
        t = tanhf(u);
        return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * 0.79788456080286536f * (1.0f + 0.134145f * x * x);
    case VIT_ACT_QUICK_GELU: s = 1.0f / (1.0f + expf(-1.702f * x)); return s + 1.702f * x * s * (1.0f - s);
    case VIT_ACT_SILU: s = 1.0f / (1.0f + expf(-x)); return s * (1.0f + x * (1.0f - s));
    default: return 1.0f;
    }
}

VITDEF void vit_k_act_back_ref(float *dx, const float *x, const float *dy, int n, vit_act act) {
    int i;
    for (i = 0; i < n; i++) dx[i] = dy[i] * vit__act_d1(x[i], act);
}

VITDEF void vit_k_glu_back_ref(float *dx, const float *x, const float *dy, int rows, int H, vit_act act) {
    int r, j;
    for (r = 0; r < rows; r++)
        for (j = 0; j < H; j++) {
            const float *xr = x + (size_t)r * 2 * H;
            float g = dy[(size_t)r * H + j], a = xr[j], v = xr[H + j];
            dx[(size_t)r * 2 * H + j] = g * v * vit__act_d1(a, act);
            dx[(size_t)r * 2 * H + H + j] = g * vit__act1(a, act);
        }
}

VITDEF void vit_k_softmax_back_ref(float *dx, const float *y, const float *dy, int rows, int n) {
    int r, i;
    for (r = 0; r < rows; r++) {
        const float *yr = y + (size_t)r * n, *gr = dy + (size_t)r * n;
        float *dr = dx + (size_t)r * n, s = 0.0f;
        for (i = 0; i < n; i++) s += yr[i] * gr[i];
        for (i = 0; i < n; i++) dr[i] = yr[i] * (gr[i] - s);
    }
}

/* P = post softmax(S), S = scale q k^T, out = P v; so dP = dout v^T,
   dv = P^T dout, dS = P (dP - sum(P dP) / post) (the softmax reversed with
   P / post its output), dq = scale dS k, dk = scale dS^T q. */
VITDEF void vit_k_attention_back_ref(float *dq, float *dk, float *dv, float *datt, const float *dout, const float *q,
                                     const float *k, const float *v, const float *att, const vit_attn_shape *s) {
    int b, h, i, j, d, N = s->N, HS = s->HS, ld = s->ld, ldo = s->NH * s->HS;
    for (b = 0; b < s->B; b++)
        for (h = 0; h < s->NH; h++) {
            const float *P = att + ((size_t)b * s->NH + h) * N * N, *o = dout + (size_t)b * N * ldo + h * HS;
            size_t base = (size_t)b * N * ld + (size_t)h * HS;
            for (i = 0; i < N && datt; i++)
                for (j = 0; j < N; j++) {
                    float g = 0.0f;
                    for (d = 0; d < HS; d++) g += o[(size_t)i * ldo + d] * v[base + (size_t)j * ld + d];
                    datt[((size_t)b * s->NH + h) * N * N + (size_t)i * N + j] = g;
                }
            for (j = 0; j < N; j++)
                for (d = 0; d < HS; d++) {
                    float g = 0.0f;
                    for (i = 0; i < N; i++) g += P[(size_t)i * N + j] * o[(size_t)i * ldo + d];
                    dv[base + (size_t)j * ld + d] = g;
                }
            for (i = 0; i < N; i++)
                for (d = 0; d < HS; d++) dq[base + (size_t)i * ld + d] = dk[base + (size_t)i * ld + d] = 0.0f;
            for (i = 0; i < N; i++) {
                float sum = 0.0f, g;
                /* dP row i again (the _ref keeps no N x N scratch), then dS row i */
                for (j = 0; j < N; j++) {
                    g = 0.0f;
                    for (d = 0; d < HS; d++) g += o[(size_t)i * ldo + d] * v[base + (size_t)j * ld + d];
                    sum += P[(size_t)i * N + j] * g;
                }
                for (j = 0; j < N; j++) {
                    float ds;
                    g = 0.0f;
                    for (d = 0; d < HS; d++) g += o[(size_t)i * ldo + d] * v[base + (size_t)j * ld + d];
                    ds = P[(size_t)i * N + j] * (g - sum / s->post);
                    for (d = 0; d < HS; d++) {
                        dq[base + (size_t)i * ld + d] += s->scale * ds * k[base + (size_t)j * ld + d];
                        dk[base + (size_t)j * ld + d] += s->scale * ds * q[base + (size_t)i * ld + d];
                    }
                }
            }
        }
}

VITDEF void vit_k_patch_conv_back_ref(float *dx, const float *dy, const float *w, const vit_patch_shape *sh) {
    int B = sh->B, Cin = sh->C, H = sh->H, W = sh->W, P = sh->P, D = sh->D;
    int GH = H / P, GW = W / P, bi, c, yy, xx, d;
    for (bi = 0; bi < B; bi++)
        for (c = 0; c < Cin; c++)
            for (yy = 0; yy < H; yy++)
                for (xx = 0; xx < W; xx++) {
                    float g = 0.0f;
                    if (yy < GH * P && xx < GW * P) {
                        const float *dt = dy + ((size_t)bi * GH * GW + (size_t)(yy / P) * GW + xx / P) * D;
                        for (d = 0; d < D; d++)
                            g += dt[d] * w[(((size_t)d * Cin + c) * P + yy % P) * P + xx % P];
                    }
                    dx[(((size_t)bi * Cin + c) * H + yy) * W + xx] = g;
                }
}

#ifndef VIT_NO_SIMD
static void vit__layernorm_back_row(float *dx, const float *x, const float *w, const float *dy, int C, float eps) {
    int i;
    float mean, rstd = vit__row_rstd(x, C, eps, &mean), mg, mgx;
    vit__vf acc = vit__v_zero(), acc2 = vit__v_zero(), vm = vit__v_set1(mean), vr = vit__v_set1(rstd), vmg, vmgx;
    for (i = 0; i + VIT__VW <= C; i += VIT__VW) {
        vit__vf g = vit__v_mul(vit__v_load(dy + i), vit__v_load(w + i));
        acc = vit__v_add(acc, g);
        acc2 = vit__v_fma(g, vit__v_mul(vit__v_sub(vit__v_load(x + i), vm), vr), acc2);
    }
    mg = vit__v_hsum(acc);
    mgx = vit__v_hsum(acc2);
    for (; i < C; i++) {
        mg += dy[i] * w[i];
        mgx += dy[i] * w[i] * (x[i] - mean) * rstd;
    }
    mg /= (float)C;
    mgx /= (float)C;
    vmg = vit__v_set1(mg);
    vmgx = vit__v_set1(mgx);
    for (i = 0; i + VIT__VW <= C; i += VIT__VW) {
        vit__vf xh = vit__v_mul(vit__v_sub(vit__v_load(x + i), vm), vr);
        vit__vf g = vit__v_sub(vit__v_sub(vit__v_mul(vit__v_load(dy + i), vit__v_load(w + i)), vmg),
                               vit__v_mul(xh, vmgx));
        vit__v_store(dx + i, vit__v_fma(vr, g, vit__v_load(dx + i)));
    }
    for (; i < C; i++) dx[i] += rstd * (dy[i] * w[i] - mg - (x[i] - mean) * rstd * mgx);
}

static void vit__layernorm_back_task(const void *ctx, int r0, int r1, int thread) {
    const vit__rows_ctx *c = (const vit__rows_ctx *)ctx;
    int r;
    (void)thread;
    for (r = r0; r < r1; r++)
        vit__layernorm_back_row(c->y + (size_t)r * c->n, c->x + (size_t)r * c->n, c->w, c->b + (size_t)r * c->n, c->n,
                                c->eps);
}

VITDEF void vit_k_layernorm_back(float *dx, const float *x, const float *w, const float *dy, int rows, int C,
                                 float eps) {
    vit__rows_ctx c;
    c.y = dx; c.x = x; c.w = w; c.b = dy; c.n = C; c.eps = eps; /* b carries dy */
    vit__parallel(rows, vit__par_threads((double)rows * C), vit__layernorm_back_task, &c);
}

/* act'(x), vectors: the forward's erfc, exp and tanh approximations. */
static vit__vf vit__v_act_d(vit__vf x, int act) {
    vit__vf s, t, u, one = vit__v_set1(1.0f);
    switch (act) {
    case VIT_ACT_GELU: { /* Phi(x) + x phi(x), Phi = (1 + erf(x / sqrt2)) / 2 as vit__v_gelu has it */
        vit__vf z = vit__v_mul(vit__v_abs(x), vit__v_set1(0.70710678118654752f)), e, q, p;
        t = vit__v_div(one, vit__v_fma(z, vit__v_set1(0.3275911f), one));
        p = vit__v_set1(1.061405429f);
        p = vit__v_fma(p, t, vit__v_set1(-1.453152027f));
        p = vit__v_fma(p, t, vit__v_set1(1.421413741f));
        p = vit__v_fma(p, t, vit__v_set1(-0.284496736f));
        p = vit__v_fma(p, t, vit__v_set1(0.254829592f));
        p = vit__v_mul(p, t);
        e = vit__v_exp(vit__v_mul(vit__v_sub(vit__v_zero(), z), z)); /* e^(-x^2/2) */
        q = vit__v_mul(p, e);                                         /* erfc(|z|) */
        q = vit__v_select_ge0(x, vit__v_sub(vit__v_set1(2.0f), q), q);
        return vit__v_fma(vit__v_mul(x, vit__v_set1(0.39894228040143268f)), e, vit__v_mul(vit__v_set1(0.5f), q));
    }
    case VIT_ACT_RELU: return vit__v_select_ge0(vit__v_sub(vit__v_zero(), x), vit__v_zero(), one); /* 0 at 0 */
    case VIT_ACT_GELU_TANH:
        u = vit__v_mul(vit__v_set1(0.79788456080286536f),
                       vit__v_fma(vit__v_mul(vit__v_set1(0.044715f), x), vit__v_mul(x, x), x));
        t = vit__v_tanh(u);
        s = vit__v_mul(vit__v_mul(vit__v_set1(0.5f * 0.79788456080286536f), x),
                       vit__v_mul(vit__v_sub(one, vit__v_mul(t, t)),
                                  vit__v_fma(vit__v_set1(0.134145f), vit__v_mul(x, x), one)));
        return vit__v_fma(vit__v_set1(0.5f), vit__v_add(one, t), s);
    case VIT_ACT_QUICK_GELU:
        s = vit__v_sigmoid(vit__v_mul(vit__v_set1(1.702f), x));
        return vit__v_fma(vit__v_mul(vit__v_set1(1.702f), x), vit__v_mul(s, vit__v_sub(one, s)), s);
    case VIT_ACT_SILU:
        s = vit__v_sigmoid(x);
        return vit__v_mul(s, vit__v_fma(x, vit__v_sub(one, s), one));
    default: return one;
    }
}

VITDEF void vit_k_act_back(float *dx, const float *x, const float *dy, int n, vit_act act) {
    int i, j;
    for (i = 0; i + VIT__VW <= n; i += VIT__VW)
        vit__v_store(dx + i, vit__v_mul(vit__v_load(dy + i), vit__v_act_d(vit__v_load(x + i), act)));
    if (i < n) { /* the tail through one padded vector: every element meets the same approximation */
        float t[VIT__VW] = {0};
        for (j = 0; j < n - i; j++) t[j] = x[i + j];
        vit__v_store(t, vit__v_act_d(vit__v_load(t), act));
        for (j = 0; j < n - i; j++) dx[i + j] = dy[i + j] * t[j];
    }
}

VITDEF void vit_k_glu_back(float *dx, const float *x, const float *dy, int rows, int H, vit_act act) {
    int r, j, u;
    for (r = 0; r < rows; r++) {
        const float *a = x + (size_t)r * 2 * H, *v = a + H, *g = dy + (size_t)r * H;
        float *da = dx + (size_t)r * 2 * H, *dv = da + H;
        for (j = 0; j + VIT__VW <= H; j += VIT__VW) {
            vit__vf va = vit__v_load(a + j), vg = vit__v_load(g + j);
            vit__v_store(da + j, vit__v_mul(vit__v_mul(vg, vit__v_load(v + j)), vit__v_act_d(va, act)));
            vit__v_store(dv + j, vit__v_mul(vg, vit__v_act(va, act)));
        }
        if (j < H) {
            float t[VIT__VW] = {0}, f[VIT__VW];
            for (u = 0; u < H - j; u++) t[u] = a[j + u];
            vit__v_store(f, vit__v_act(vit__v_load(t), act));
            vit__v_store(t, vit__v_act_d(vit__v_load(t), act));
            for (u = 0; u < H - j; u++) {
                da[j + u] = g[j + u] * v[j + u] * t[u];
                dv[j + u] = g[j + u] * f[u];
            }
        }
    }
}

/* One row: dx = y (dy - s / post) with s = sum(y dy) (post 1: the softmax's own rule). */
static void vit__softmax_back_row(float *dx, const float *y, const float *dy, int n, float post) {
    int i;
    float s;
    vit__vf acc = vit__v_zero(), vs;
    for (i = 0; i + VIT__VW <= n; i += VIT__VW) acc = vit__v_fma(vit__v_load(y + i), vit__v_load(dy + i), acc);
    s = vit__v_hsum(acc);
    for (; i < n; i++) s += y[i] * dy[i];
    s /= post;
    vs = vit__v_set1(s);
    for (i = 0; i + VIT__VW <= n; i += VIT__VW)
        vit__v_store(dx + i, vit__v_mul(vit__v_load(y + i), vit__v_sub(vit__v_load(dy + i), vs)));
    for (; i < n; i++) dx[i] = y[i] * (dy[i] - s);
}

VITDEF void vit_k_softmax_back(float *dx, const float *y, const float *dy, int rows, int n) {
    int r;
    for (r = 0; r < rows; r++)
        vit__softmax_back_row(dx + (size_t)r * n, y + (size_t)r * n, dy + (size_t)r * n, n, 1.0f);
}

/* dst (cols, rows) = src (rows, cols)^T, src's row stride lds. */
static void vit__transpose(float *dst, const float *src, int rows, int cols, int lds) {
    int i, j;
    for (i = 0; i < rows; i++)
        for (j = 0; j < cols; j++) dst[(size_t)j * rows + i] = src[(size_t)i * lds + j];
}

typedef struct vit__attb {
    float *dq, *dk, *dv, *datt, *scratch;
    const float *dout, *q, *k, *v, *att;
    const vit_attn_shape *s;
    int datt_only; /* 1: datt alone (dq, dk, dv untouched) */
} vit__attb;

/* One (batch, head) per task, its products through the GEMM (one thread
   each: tasks are the parallel loop) in slot `thread` of the scratch:
   dS (N, N), then three (HS, N) for the transposed operands, so that every
   product reads its operands as rows (dv^T = dout^T P, dk^T = q^T dS). */
static void vit__attention_back_task(const void *ctx, int t0, int t1, int thread) {
    const vit__attb *c = (const vit__attb *)ctx;
    const vit_attn_shape *s = c->s;
    int N = s->N, HS = s->HS, ld = s->ld, ldo = s->NH * s->HS, t, i;
    float *dS = c->scratch + (size_t)thread * ((size_t)N * N + 3 * (size_t)HS * N), *t1m = dS + (size_t)N * N;
    float *t2 = t1m + (size_t)HS * N;
    for (t = t0; t < t1; t++) {
        int b = t / s->NH, h = t % s->NH;
        const float *P = c->att + (size_t)t * N * N, *o = c->dout + (size_t)b * N * ldo + h * HS;
        size_t base = (size_t)b * N * ld + (size_t)h * HS;
        vit__mm p;

        /* dP = dout v^T, kept where asked for */
        p = vit__mm_dense(dS, o, c->v + base, NULL, N, HS, N);
        p.ldx = ldo; p.ldw = ld; p.threaded = 0;
        vit__matmul(&p);
        if (c->datt) memcpy(c->datt + (size_t)t * N * N, dS, (size_t)N * N * sizeof(float));
        if (c->datt_only) continue;

        /* dv^T = dout^T P, then into dv's columns */
        vit__transpose(t1m, o, N, HS, ldo);
        p = vit__mm_nn(t2, t1m, P, HS, N, N);
        p.threaded = 0;
        vit__matmul(&p);
        for (i = 0; i < N; i++) {
            int d;
            for (d = 0; d < HS; d++) c->dv[base + (size_t)i * ld + d] = t2[(size_t)d * N + i];
        }

        /* dS = P (dP - sum(P dP) / post) */
        for (i = 0; i < N; i++)
            vit__softmax_back_row(dS + (size_t)i * N, P + (size_t)i * N, dS + (size_t)i * N, N, s->post);

        /* dq = scale dS k */
        p = vit__mm_nn(c->dq + base, dS, c->k + base, N, N, HS);
        p.ldw = ld; p.ldy = ld; p.alpha = s->scale; p.threaded = 0;
        vit__matmul(&p);

        /* dk^T = scale q^T dS, then into dk's columns */
        vit__transpose(t1m, c->q + base, N, HS, ld);
        p = vit__mm_nn(t2, t1m, dS, HS, N, N);
        p.alpha = s->scale; p.threaded = 0;
        vit__matmul(&p);
        for (i = 0; i < N; i++) {
            int d;
            for (d = 0; d < HS; d++) c->dk[base + (size_t)i * ld + d] = t2[(size_t)d * N + i];
        }
    }
}

/* slots: scratch slots of N*N + 3*HS*N floats (at most that many threads). */
static void vit__attention_back(const vit__attb *c, int slots) {
    int tasks = c->s->B * c->s->NH, n = vit__threads();
    if (n > slots) n = slots;
    vit__parallel(tasks, n, vit__attention_back_task, c);
}

VITDEF void vit_k_attention_back(float *dq, float *dk, float *dv, float *datt, float *scratch, const float *dout,
                                 const float *q, const float *k, const float *v, const float *att,
                                 const vit_attn_shape *s) {
    vit__attb c;
    c.dq = dq; c.dk = dk; c.dv = dv; c.datt = datt; c.scratch = scratch;
    c.dout = dout; c.q = q; c.k = k; c.v = v; c.att = att; c.s = s;
    c.datt_only = 0;
    vit__attention_back(&c, s->B * s->NH);
}

VITDEF void vit_k_patch_conv_back(float *dx, float *cols, const float *dy, const float *w, const vit_patch_shape *sh) {
    int B = sh->B, Cin = sh->C, H = sh->H, W = sh->W, P = sh->P, D = sh->D, GH = H / P, GW = W / P;
    int K = Cin * P * P, bi, g, c, py;
    /* cols (B*G, Cin*P*P) = dy (B*G, D) w (D, Cin*P*P): each patch's pixels, then put back in place */
    vit__mm p = vit__mm_nn(cols, dy, w, B * GH * GW, D, K);
    vit__matmul(&p);
    if (GH * P < H || GW * P < W) memset(dx, 0, (size_t)B * Cin * H * W * sizeof(float));
    for (bi = 0; bi < B; bi++)
        for (g = 0; g < GH * GW; g++)
            for (c = 0; c < Cin; c++)
                for (py = 0; py < P; py++)
                    memcpy(dx + (((size_t)bi * Cin + c) * H + (size_t)(g / GW) * P + py) * W + (size_t)(g % GW) * P,
                           cols + ((size_t)bi * GH * GW + g) * K + ((size_t)c * P + py) * P, (size_t)P * sizeof(float));
}
#else
VITDEF void vit_k_layernorm_back(float *dx, const float *x, const float *w, const float *dy, int rows, int C,
                                 float eps) {
    vit_k_layernorm_back_ref(dx, x, w, dy, rows, C, eps);
}
VITDEF void vit_k_act_back(float *dx, const float *x, const float *dy, int n, vit_act act) {
    vit_k_act_back_ref(dx, x, dy, n, act);
}
VITDEF void vit_k_glu_back(float *dx, const float *x, const float *dy, int rows, int H, vit_act act) {
    vit_k_glu_back_ref(dx, x, dy, rows, H, act);
}
VITDEF void vit_k_softmax_back(float *dx, const float *y, const float *dy, int rows, int n) {
    vit_k_softmax_back_ref(dx, y, dy, rows, n);
}
VITDEF void vit_k_attention_back(float *dq, float *dk, float *dv, float *datt, float *scratch, const float *dout,
                                 const float *q, const float *k, const float *v, const float *att,
                                 const vit_attn_shape *s) {
    (void)scratch;
    vit_k_attention_back_ref(dq, dk, dv, datt, dout, q, k, v, att, s);
}
typedef struct vit__attb {
    float *dq, *dk, *dv, *datt, *scratch;
    const float *dout, *q, *k, *v, *att;
    const vit_attn_shape *s;
    int datt_only; /* 1: datt alone (dq, dk, dv untouched) */
} vit__attb;
static void vit__attention_back(const vit__attb *c, int slots) {
    (void)slots; /* datt_only: the _ref computes all (it has no scratch to keep dS in) */
    vit_k_attention_back_ref(c->dq, c->dk, c->dv, c->datt, c->dout, c->q, c->k, c->v, c->att, c->s);
}
VITDEF void vit_k_patch_conv_back(float *dx, float *cols, const float *dy, const float *w, const vit_patch_shape *sh) {
    (void)cols;
    vit_k_patch_conv_back_ref(dx, dy, w, sh);
}
#endif

/* ---- kernels: row statistics, row affine maps, products ---- */
/* The pieces of the seed modules' pooling, normalisations and gates.
   Statistics take two passes (mean, then mean squared deviation) as
   vit_k_layernorm does; the fast versions sum VIT__VW lanes, then the tail,
   so |fast - ref| is rounding order only (~n * 2^-24 relative). */

VITDEF void vit_k_rowstats_ref(float *mean, float *var, const float *x, int rows, int n) {
    int r, i;
    for (r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * n;
        float m = 0.0f, v = 0.0f;
        for (i = 0; i < n; i++) m += xr[i];
        m /= (float)n;
        mean[r] = m;
        if (var) {
            for (i = 0; i < n; i++) v += (xr[i] - m) * (xr[i] - m);
            var[r] = v / (float)n;
        }
    }
}

VITDEF void vit_k_rowaffine_ref(float *y, const float *x, const float *a, const float *b, int rows, int n) {
    int r, i;
    for (r = 0; r < rows; r++)
        for (i = 0; i < n; i++) y[(size_t)r * n + i] = x[(size_t)r * n + i] * a[r] + (b ? b[r] : 0.0f);
}

VITDEF void vit_k_mul_ref(float *y, const float *a, const float *b, int n) {
    int i;
    for (i = 0; i < n; i++) y[i] = a[i] * b[i];
}

#ifndef VIT_NO_SIMD
/* The seed modules call these kernels once per group or channel, often on
   little work: vit__par_threads keeps it on the calling thread, as the
   GEMM does below its own threshold. */

/* The row kernels' arguments: y (rows, n) from x, a and b per row (rowaffine),
   mean and var per row (rowstats), w and b per output channel (conv1x1). */
typedef struct vit__rowk {
    float *y, *mean, *var;
    const float *x, *a, *b, *w;
    int n, Cin, Cout;
} vit__rowk;

static void vit__rowstats_row(float *mean, float *var, const float *x, int r, int n) {
    const float *xr = x + (size_t)r * n;
    vit__vf acc = vit__v_zero(), vm;
    float m, v;
    int i;
    for (i = 0; i + VIT__VW <= n; i += VIT__VW) acc = vit__v_add(acc, vit__v_load(xr + i));
    m = vit__v_hsum(acc);
    for (; i < n; i++) m += xr[i];
    m /= (float)n;
    mean[r] = m;
    if (!var) return;
    vm = vit__v_set1(m);
    acc = vit__v_zero();
    for (i = 0; i + VIT__VW <= n; i += VIT__VW) {
        vit__vf d = vit__v_sub(vit__v_load(xr + i), vm);
        acc = vit__v_fma(d, d, acc);
    }
    v = vit__v_hsum(acc);
    for (; i < n; i++) v += (xr[i] - m) * (xr[i] - m);
    var[r] = v / (float)n;
}

static void vit__rowstats_rows(const void *ctx, int r0, int r1, int thread) {
    const vit__rowk *c = (const vit__rowk *)ctx;
    int r;
    (void)thread;
    for (r = r0; r < r1; r++) vit__rowstats_row(c->mean, c->var, c->x, r, c->n);
}

VITDEF void vit_k_rowstats(float *mean, float *var, const float *x, int rows, int n) {
    vit__rowk c;
    memset(&c, 0, sizeof c);
    c.mean = mean; c.var = var; c.x = x; c.n = n;
    vit__parallel(rows, vit__par_threads((double)rows * n), vit__rowstats_rows, &c);
}

static void vit__rowaffine_row(float *y, const float *x, const float *a, const float *b, int r, int n) {
    const float *xr = x + (size_t)r * n;
    float *yr = y + (size_t)r * n, ar = a[r], br = b ? b[r] : 0.0f;
    vit__vf va = vit__v_set1(ar), vb = vit__v_set1(br);
    int i;
    for (i = 0; i + VIT__VW <= n; i += VIT__VW) vit__v_store(yr + i, vit__v_fma(vit__v_load(xr + i), va, vb));
    for (; i < n; i++) yr[i] = xr[i] * ar + br;
}

static void vit__rowaffine_rows(const void *ctx, int r0, int r1, int thread) {
    const vit__rowk *c = (const vit__rowk *)ctx;
    int r;
    (void)thread;
    for (r = r0; r < r1; r++) vit__rowaffine_row(c->y, c->x, c->a, c->b, r, c->n);
}

VITDEF void vit_k_rowaffine(float *y, const float *x, const float *a, const float *b, int rows, int n) {
    vit__rowk c;
    memset(&c, 0, sizeof c);
    c.y = y; c.x = x; c.a = a; c.b = b; c.n = n;
    vit__parallel(rows, vit__par_threads((double)rows * n), vit__rowaffine_rows, &c);
}

VITDEF void vit_k_mul(float *y, const float *a, const float *b, int n) {
    int i;
    for (i = 0; i + VIT__VW <= n; i += VIT__VW) vit__v_store(y + i, vit__v_mul(vit__v_load(a + i), vit__v_load(b + i)));
    for (; i < n; i++) y[i] = a[i] * b[i];
}
#else
VITDEF void vit_k_rowstats(float *mean, float *var, const float *x, int rows, int n) {
    vit_k_rowstats_ref(mean, var, x, rows, n);
}
VITDEF void vit_k_rowaffine(float *y, const float *x, const float *a, const float *b, int rows, int n) {
    vit_k_rowaffine_ref(y, x, a, b, rows, n);
}
VITDEF void vit_k_mul(float *y, const float *a, const float *b, int n) { vit_k_mul_ref(y, a, b, n); }
#endif

/* ---- kernels: 1x1 and depth-wise convolution, average pooling ---- */
/* Every output sums its terms in the _ref order (input channels, or kernel
   rows then columns); the fast versions run 8 or 16 outputs side by side
   with FMA, so they differ from _ref by rounding only. */

VITDEF void vit_k_conv1x1_ref(float *y, const float *x, const float *w, const float *b, int B, int Cin, int Cout,
                              int HW) {
    int bi, o, i, p;
    for (bi = 0; bi < B; bi++)
        for (o = 0; o < Cout; o++)
            for (p = 0; p < HW; p++) {
                float s = 0.0f;
                for (i = 0; i < Cin; i++) s += w[(size_t)o * Cin + i] * x[((size_t)bi * Cin + i) * HW + p];
                y[((size_t)bi * Cout + o) * HW + p] = s + (b ? b[o] : 0.0f);
            }
}

VITDEF void vit_k_dwconv_ref(float *y, const float *x, const float *w, const float *b, const vit_conv_shape *sh) {
    int B = sh->B, H = sh->H, W = sh->W, C = sh->C, K = sh->K, stride = sh->stride, pad = sh->pad;
    int Ho = (H + 2 * pad - K) / stride + 1, Wo = (W + 2 * pad - K) / stride + 1, bi, oy, ox, c, ky, kx;
    for (bi = 0; bi < B; bi++)
        for (oy = 0; oy < Ho; oy++)
            for (ox = 0; ox < Wo; ox++)
                for (c = 0; c < C; c++) {
                    float s = 0.0f;
                    for (ky = 0; ky < K; ky++)
                        for (kx = 0; kx < K; kx++) {
                            int iy = oy * stride - pad + ky, ix = ox * stride - pad + kx;
                            if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue; /* zero padding */
                            s += x[(((size_t)bi * H + iy) * W + ix) * C + c] * w[((size_t)c * K + ky) * K + kx];
                        }
                    y[(((size_t)bi * Ho + oy) * Wo + ox) * C + c] = s + (b ? b[c] : 0.0f);
                }
}

VITDEF void vit_k_avgpool_ref(float *y, const float *x, int B, int H, int W, int C, int S) {
    int Ho = (H + S - 1) / S, Wo = (W + S - 1) / S, bi, oy, ox, c, iy, ix;
    for (bi = 0; bi < B; bi++)
        for (oy = 0; oy < Ho; oy++)
            for (ox = 0; ox < Wo; ox++) {
                int y1 = oy * S + S < H ? oy * S + S : H, x1 = ox * S + S < W ? ox * S + S : W;
                for (c = 0; c < C; c++) {
                    float s = 0.0f;
                    for (iy = oy * S; iy < y1; iy++)
                        for (ix = ox * S; ix < x1; ix++) s += x[(((size_t)bi * H + iy) * W + ix) * C + c];
                    y[(((size_t)bi * Ho + oy) * Wo + ox) * C + c] = s / (float)((y1 - oy * S) * (x1 - ox * S));
                }
            }
}

#ifndef VIT_NO_SIMD
/* Output channel o of image bi (t = bi * Cout + o). */
static void vit__conv1x1_row(float *y, const float *x, const float *w, const float *b, int t, int Cin, int Cout,
                             int HW) {
    int bi = t / Cout, o = t % Cout, i, p;
    const float *xb = x + (size_t)bi * Cin * HW, *wo = w + (size_t)o * Cin;
    float *yo = y + (size_t)t * HW, bo = b ? b[o] : 0.0f;
    for (p = 0; p + VIT__VW <= HW; p += VIT__VW) {
        vit__vf acc = vit__v_zero();
        for (i = 0; i < Cin; i++) acc = vit__v_fma(vit__v_set1(wo[i]), vit__v_load(xb + (size_t)i * HW + p), acc);
        vit__v_store(yo + p, vit__v_add(acc, vit__v_set1(bo)));
    }
    for (; p < HW; p++) {
        float s = 0.0f;
        for (i = 0; i < Cin; i++) s += wo[i] * xb[(size_t)i * HW + p];
        yo[p] = s + bo;
    }
}

static void vit__conv1x1_rows(const void *ctx, int t0, int t1, int thread) {
    const vit__rowk *c = (const vit__rowk *)ctx;
    int t;
    (void)thread;
    for (t = t0; t < t1; t++) vit__conv1x1_row(c->y, c->x, c->w, c->b, t, c->Cin, c->Cout, c->n);
}

VITDEF void vit_k_conv1x1(float *y, const float *x, const float *w, const float *b, int B, int Cin, int Cout, int HW) {
    vit__rowk c;
    memset(&c, 0, sizeof c);
    c.y = y; c.x = x; c.w = w; c.b = b; c.Cin = Cin; c.Cout = Cout; c.n = HW;
    vit__parallel(B * Cout, vit__par_threads((double)B * Cout * Cin * HW), vit__conv1x1_rows, &c);
}

/* The weights are first transposed to wt (K*K, C), so that one kernel tap
   is a contiguous run of channels. */
/* The pooling kernels' arguments: y (B, Ho, Wo, C) from x (B, H, W, C),
   with wt (K*K, C) and b for dwconv, S for avgpool. */
typedef struct vit__poolk {
    float *y;
    const float *x, *wt, *b;
    int H, W, C, K, stride, pad, S;
} vit__poolk;

/* Output rows [r0, r1) of B * Ho. */
static void vit__dwconv_rows(const void *ctx, int r0, int r1, int thread) {
    const vit__poolk *a = (const vit__poolk *)ctx;
    float *y = a->y;
    const float *x = a->x, *wt = a->wt, *b = a->b;
    int H = a->H, W = a->W, C = a->C, K = a->K, stride = a->stride, pad = a->pad, row;
    int Ho = (H + 2 * pad - K) / stride + 1, Wo = (W + 2 * pad - K) / stride + 1;
    (void)thread;
    for (row = r0; row < r1; row++) {
        int bi = row / Ho, oy = row % Ho, ox, c0, ky, kx;
        for (ox = 0; ox < Wo; ox++) {
            float *yp = y + ((size_t)row * Wo + ox) * C;
            for (c0 = 0; c0 < C; c0 += VIT__VW) {
                int n = C - c0 < VIT__VW ? C - c0 : VIT__VW;
                vit__vf acc = vit__v_zero();
                for (ky = 0; ky < K; ky++)
                    for (kx = 0; kx < K; kx++) {
                        int iy = oy * stride - pad + ky, ix = ox * stride - pad + kx;
                        if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                        acc = vit__v_fma(vit__v_load_part(x + (((size_t)bi * H + iy) * W + ix) * C + c0, n, 0.0f),
                                         vit__v_load_part(wt + (size_t)(ky * K + kx) * C + c0, n, 0.0f), acc);
                    }
                vit__v_store_part(yp + c0, vit__v_add(acc, b ? vit__v_load_part(b + c0, n, 0.0f) : vit__v_zero()), n);
            }
        }
    }
}

VITDEF void vit_k_dwconv(float *y, float *wt, const float *x, const float *w, const float *b,
                         const vit_conv_shape *sh) {
    int B = sh->B, H = sh->H, W = sh->W, C = sh->C, K = sh->K, stride = sh->stride, pad = sh->pad;
    int Ho = (H + 2 * pad - K) / stride + 1, Wo = (W + 2 * pad - K) / stride + 1, i, c;
    vit__poolk a;
    for (i = 0; i < K * K; i++)
        for (c = 0; c < C; c++) wt[(size_t)i * C + c] = w[(size_t)c * K * K + i];
    memset(&a, 0, sizeof a);
    a.y = y; a.x = x; a.wt = wt; a.b = b; a.H = H; a.W = W; a.C = C; a.K = K; a.stride = stride; a.pad = pad;
    vit__parallel(B * Ho, vit__par_threads((double)B * Ho * Wo * C * K * K), vit__dwconv_rows, &a);
}

static void vit__avgpool_rows(const void *ctx, int r0, int r1, int thread) {
    const vit__poolk *a = (const vit__poolk *)ctx;
    float *y = a->y;
    const float *x = a->x;
    int H = a->H, W = a->W, C = a->C, S = a->S, Ho = (H + S - 1) / S, Wo = (W + S - 1) / S, row;
    (void)thread;
    for (row = r0; row < r1; row++) {
        int bi = row / Ho, oy = row % Ho, ox, c0, iy, ix;
        int y1 = oy * S + S < H ? oy * S + S : H;
        for (ox = 0; ox < Wo; ox++) {
            int x1 = ox * S + S < W ? ox * S + S : W;
            vit__vf cnt = vit__v_set1((float)((y1 - oy * S) * (x1 - ox * S)));
            float *yp = y + ((size_t)row * Wo + ox) * C;
            for (c0 = 0; c0 < C; c0 += VIT__VW) {
                int n = C - c0 < VIT__VW ? C - c0 : VIT__VW;
                vit__vf acc = vit__v_zero();
                for (iy = oy * S; iy < y1; iy++)
                    for (ix = ox * S; ix < x1; ix++)
                        acc = vit__v_add(acc, vit__v_load_part(x + (((size_t)bi * H + iy) * W + ix) * C + c0, n, 0.0f));
                vit__v_store_part(yp + c0, vit__v_div(acc, cnt), n);
            }
        }
    }
}

VITDEF void vit_k_avgpool(float *y, const float *x, int B, int H, int W, int C, int S) {
    vit__poolk a;
    memset(&a, 0, sizeof a);
    a.y = y; a.x = x; a.H = H; a.W = W; a.C = C; a.S = S;
    vit__parallel(B * ((H + S - 1) / S), vit__par_threads((double)B * H * W * C), vit__avgpool_rows, &a);
}
#else
VITDEF void vit_k_conv1x1(float *y, const float *x, const float *w, const float *b, int B, int Cin, int Cout, int HW) {
    vit_k_conv1x1_ref(y, x, w, b, B, Cin, Cout, HW);
}
VITDEF void vit_k_dwconv(float *y, float *wt, const float *x, const float *w, const float *b,
                         const vit_conv_shape *sh) {
    (void)wt;
    vit_k_dwconv_ref(y, x, w, b, sh);
}
VITDEF void vit_k_avgpool(float *y, const float *x, int B, int H, int W, int C, int S) {
    vit_k_avgpool_ref(y, x, B, H, W, C, S);
}
#endif

/* ---- kernels: split attention (scores, attend) ---- */
/* vit_k_attention with its two products apart, for attention whose keys
   differ from its queries in number (EMSA's reduced keys) or whose maps are
   transformed between the softmax and the values. Both go through the GEMM,
   one task per (batch, head). */

VITDEF void vit_k_scores_ref(float *s, const float *q, const float *k, const vit_heads_shape *sh) {
    int B = sh->B, NH = sh->NH, Nq = sh->Nq, Nk = sh->Nk, HS = sh->HS, ldq = sh->ldq, ldk = sh->ldk, bi, h, i, j, d;
    float scale = sh->scale;
    for (bi = 0; bi < B; bi++)
        for (h = 0; h < NH; h++)
            for (i = 0; i < Nq; i++)
                for (j = 0; j < Nk; j++) {
                    const float *qi = q + ((size_t)bi * Nq + i) * ldq + h * HS,
                                *kj = k + ((size_t)bi * Nk + j) * ldk + h * HS;
                    float acc = 0.0f;
                    for (d = 0; d < HS; d++) acc += qi[d] * kj[d];
                    s[(((size_t)bi * NH + h) * Nq + i) * Nk + j] = scale * acc;
                }
}

VITDEF void vit_k_attend_ref(float *out, const float *p, const float *v, const vit_heads_shape *sh) {
    int B = sh->B, NH = sh->NH, Nq = sh->Nq, Nk = sh->Nk, HS = sh->HS, ldv = sh->ldv, bi, h, i, j, d, C = NH * HS;
    for (bi = 0; bi < B; bi++)
        for (h = 0; h < NH; h++)
            for (i = 0; i < Nq; i++)
                for (d = 0; d < HS; d++) {
                    const float *pi = p + (((size_t)bi * NH + h) * Nq + i) * Nk;
                    float acc = 0.0f;
                    for (j = 0; j < Nk; j++) acc += pi[j] * v[((size_t)bi * Nk + j) * ldv + h * HS + d];
                    out[((size_t)bi * Nq + i) * C + h * HS + d] = acc;
                }
}

#ifndef VIT_NO_SIMD
/* Their arguments: s (B, NH, Nq, Nk) from q and k, or out from p, v and
   the scratch vt. */
typedef struct vit__splitk {
    float *s, *out;
    const float *q, *k, *p, *v;
    int NH, Nq, Nk, HS, ldq, ldk, ldv;
    float scale;
} vit__splitk;

/* Heads [t0, t1) of B * NH. */
static void vit__scores_heads(const void *ctx, int t0, int t1, int thread) {
    const vit__splitk *a = (const vit__splitk *)ctx;
    int NH = a->NH, Nq = a->Nq, Nk = a->Nk, HS = a->HS, t;
    (void)thread;
    for (t = t0; t < t1; t++) {
        int bi = t / NH, h = t % NH;
        vit__mm mm = vit__mm_dense(a->s + (size_t)t * Nq * Nk, a->q + (size_t)bi * Nq * a->ldq + h * HS,
                                   a->k + (size_t)bi * Nk * a->ldk + h * HS, NULL, Nq, HS, Nk);
        mm.ldx = a->ldq; mm.ldw = a->ldk; mm.alpha = a->scale; mm.threaded = 0;
        vit__matmul(&mm);
    }
}

VITDEF void vit_k_scores(float *s, const float *q, const float *k, const vit_heads_shape *sh) {
    int B = sh->B, NH = sh->NH, Nq = sh->Nq, Nk = sh->Nk, HS = sh->HS;
    vit__splitk a;
    memset(&a, 0, sizeof a);
    a.s = s; a.q = q; a.k = k; a.NH = NH; a.Nq = Nq; a.Nk = Nk; a.HS = HS; a.ldq = sh->ldq; a.ldk = sh->ldk;
    a.scale = sh->scale;
    vit__parallel(B * NH, vit__par_threads((double)B * NH * Nq * Nk * HS), vit__scores_heads, &a);
}

/* P V with V read as (Nk, HS) rows where it lies (vit__mm.nn). */
static void vit__attend_heads(const void *ctx, int t0, int t1, int thread) {
    const vit__splitk *a = (const vit__splitk *)ctx;
    int NH = a->NH, Nq = a->Nq, Nk = a->Nk, HS = a->HS, C = NH * HS, t;
    (void)thread;
    for (t = t0; t < t1; t++) {
        int bi = t / NH, h = t % NH;
        vit__mm mm = vit__mm_dense(a->out + (size_t)bi * Nq * C + h * HS, a->p + (size_t)t * Nq * Nk,
                                   a->v + (size_t)bi * Nk * a->ldv + h * HS, NULL, Nq, Nk, HS);
        mm.ldw = a->ldv; mm.nn = 1; mm.ldy = C; mm.threaded = 0;
        vit__matmul(&mm);
    }
}

VITDEF void vit_k_attend(float *out, float *vt, const float *p, const float *v, const vit_heads_shape *sh) {
    int B = sh->B, NH = sh->NH, Nq = sh->Nq, Nk = sh->Nk, HS = sh->HS;
    vit__splitk a;
    memset(&a, 0, sizeof a);
    (void)vt;
    a.out = out; a.p = p; a.v = v; a.NH = NH; a.Nq = Nq; a.Nk = Nk; a.HS = HS; a.ldv = sh->ldv;
    vit__parallel(B * NH, vit__par_threads((double)B * NH * Nq * Nk * HS), vit__attend_heads, &a);
}
#else
VITDEF void vit_k_scores(float *s, const float *q, const float *k, const vit_heads_shape *sh) {
    vit_k_scores_ref(s, q, k, sh);
}
VITDEF void vit_k_attend(float *out, float *vt, const float *p, const float *v, const vit_heads_shape *sh) {
    (void)vt;
    vit_k_attend_ref(out, p, v, sh);
}
#endif

/* ---- kernels: AFT ---- */
/* "An Attention Free Transformer" (Zhai et al. 2021), eq. 2:
     y[t][d] = sigmoid(q[t][d]) * sum_t' e^(w[t][t'] + k[t'][d]) v[t'][d]
                                / sum_t' e^(w[t][t'] + k[t'][d]).
   Seed 003 evaluates exp(w) @ (exp(K) * V) / (exp(w) @ exp(K)) as written,
   which overflows once a weight or a key passes ~88. Here every exponent
   is shifted first; a shift shared by numerator and denominator cancels in
   the ratio, so the result equals the seed's wherever the seed's is finite,
   and stays finite where it is not.
   _ref shifts each output (t, d) by its own m = max_t' (w[t][t'] +
   k[t'][d]): the largest term is 1, the denominator is >= 1.
   The fast version shifts by wm[t] = max_t' w[t][t'] and km[d] = max_t'
   k[t'][d] separately, which turns both sums into one GEMM: with E =
   e^(w - wm) (T, T) and G = e^(k - km) (T, D), [num | den] = E [G*v | G].
   Every term is <= 1, so nothing overflows; but when the row maximum of w
   and the column maximum of k sit at different t' far apart in value, den
   can underflow. Outputs with den < 2^-60 are recomputed the _ref way; above
   that, terms lost to underflow (< 2^-126 each) change the ratio by less
   than T * 2^-66 relative. |fast - ref| is otherwise vit__v_exp's ~2 ulp
   plus rounding order, relative to each output. */

#define VIT__AFT_TINY 8.6736174e-19f /* 2^-60 */

/* w[t][u] inside the window |t - u| < s, 0 outside (AFT-local's rule). */
static float vit__aft_w(const float *w, int ldw, int s, int t, int u) {
    int d = t > u ? t - u : u - t;
    return d < s ? w[(size_t)t * ldw + u] : 0.0f;
}

/* One output the _ref way: the weighted mean of v (stride D) for step t,
   every exponent shifted by the largest; att (T), unless NULL, receives the
   normalised weights. */
static float vit__aft_exact(float *att, const float *k, const float *v, const float *w, int ldw, int s, int t, int T,
                            int D) {
    float m = vit__aft_w(w, ldw, s, t, 0) + k[0], num = 0.0f, den = 0.0f;
    int u;
    for (u = 1; u < T; u++) {
        float e = vit__aft_w(w, ldw, s, t, u) + k[(size_t)u * D];
        m = e > m ? e : m;
    }
    for (u = 0; u < T; u++) {
        float e = expf(vit__aft_w(w, ldw, s, t, u) + k[(size_t)u * D] - m);
        num += e * v[(size_t)u * D];
        den += e;
    }
    if (att)
        for (u = 0; u < T; u++) att[u] = expf(vit__aft_w(w, ldw, s, t, u) + k[(size_t)u * D] - m) / den;
    return num / den;
}

VITDEF void vit_k_aft_ref(float *y, float *att, const float *q, const float *k, const float *v, const float *w,
                          const vit_aft_shape *sh) {
    int B = sh->B, T = sh->T, D = sh->D, ldw = sh->ldw, s = sh->s, bi, t, d;
    for (bi = 0; bi < B; bi++)
        for (t = 0; t < T; t++)
            for (d = 0; d < D; d++) {
                size_t o = ((size_t)bi * T + t) * D + d;
                float r = vit__aft_exact(att ? att + (((size_t)bi * D + d) * T + t) * T : NULL,
                                         k + (size_t)bi * T * D + d, v + (size_t)bi * T * D + d, w, ldw, s, t, T, D);
                y[o] = 1.0f / (1.0f + expf(-q[o])) * r;
            }
}

/* AFT-simple shifts by the column max of k, as a softmax over tokens. */
VITDEF void vit_k_aft_simple_ref(float *y, float *att, const float *q, const float *k, const float *v, int B, int T,
                                 int D) {
    int bi, t, d;
    for (bi = 0; bi < B; bi++)
        for (d = 0; d < D; d++) {
            const float *kb = k + (size_t)bi * T * D + d, *vb = v + (size_t)bi * T * D + d;
            float m = kb[0], num = 0.0f, den = 0.0f, r;
            for (t = 1; t < T; t++) m = kb[(size_t)t * D] > m ? kb[(size_t)t * D] : m;
            for (t = 0; t < T; t++) {
                float e = expf(kb[(size_t)t * D] - m);
                num += e * vb[(size_t)t * D];
                den += e;
            }
            r = num / den;
            for (t = 0; t < T; t++) {
                size_t o = ((size_t)bi * T + t) * D + d;
                y[o] = 1.0f / (1.0f + expf(-q[o])) * r;
                if (att) att[((size_t)bi * D + d) * T + t] = expf(kb[(size_t)t * D] - m) / den;
            }
        }
}

#ifndef VIT_NO_SIMD
/* vit_k_aft's arguments, with batch item bi's pointers (qb, kb, vb, yb) and
   the scratch: E (T, T), gv (2D, T), nd (T, 2D), km (D). */
typedef struct vit__aftk {
    float *att, *yb, *E, *gv, *nd, *km;
    const float *w, *qb, *kb, *vb;
    int T, D, ldw, s, bi;
} vit__aftk;

/* E = e^(w - wm), rows [t0, t1); the same for every batch item. */
static void vit__aft_e_rows(const void *ctx, int t0, int t1, int thread) {
    const vit__aftk *a = (const vit__aftk *)ctx;
    int T = a->T, t;
    (void)thread;
    for (t = t0; t < t1; t++) {
        float *Et = a->E + (size_t)t * T, mx;
        int u;
        for (u = 0; u < T; u++) Et[u] = vit__aft_w(a->w, a->ldw, a->s, t, u);
        mx = Et[0];
        for (u = 1; u < T; u++) mx = Et[u] > mx ? Et[u] : mx;
        for (u = 0; u < T; u += VIT__VW) {
            int n = T - u < VIT__VW ? T - u : VIT__VW;
            vit__v_store_part(Et + u, vit__v_exp(vit__v_sub(vit__v_load_part(Et + u, n, mx), vit__v_set1(mx))), n);
        }
    }
}

/* gv (2D, T), columns [t0, t1): rows d hold (G*v)^T, rows D + d hold G^T. */
static void vit__aft_gv_cols(const void *ctx, int t0, int t1, int thread) {
    const vit__aftk *a = (const vit__aftk *)ctx;
    float *gv = a->gv;
    int T = a->T, D = a->D, t;
    (void)thread;
    for (t = t0; t < t1; t++) {
        const float *kt = a->kb + (size_t)t * D, *vt = a->vb + (size_t)t * D;
        float g[VIT__VW];
        int d0, j;
        for (d0 = 0; d0 < D; d0 += VIT__VW) {
            int n = D - d0 < VIT__VW ? D - d0 : VIT__VW;
            vit__v_store(
                g, vit__v_exp(vit__v_sub(vit__v_load_part(kt + d0, n, 0.0f), vit__v_load_part(a->km + d0, n, 0.0f))));
            for (j = 0; j < n; j++) {
                gv[(size_t)(d0 + j) * T + t] = g[j] * vt[d0 + j];
                gv[(size_t)(D + d0 + j) * T + t] = g[j];
            }
        }
    }
}

/* Outputs of steps [t0, t1): numerator / denominator, gated by sigmoid(q). */
static void vit__aft_out_rows(const void *ctx, int t0, int t1, int thread) {
    const vit__aftk *a = (const vit__aftk *)ctx;
    int T = a->T, D = a->D, t;
    (void)thread;
    for (t = t0; t < t1; t++) {
        float *nt = a->nd + (size_t)t * 2 * D, *yt = a->yb + (size_t)t * D;
        int d0;
        for (d0 = 0; d0 < D; d0 += VIT__VW) {
            int n = D - d0 < VIT__VW ? D - d0 : VIT__VW;
            vit__v_store_part(
                nt + d0, vit__v_div(vit__v_load_part(nt + d0, n, 0.0f), vit__v_load_part(nt + D + d0, n, 1.0f)), n);
        }
        for (d0 = 0; d0 < D; d0++)
            if (!(nt[D + d0] >= VIT__AFT_TINY))
                nt[d0] = vit__aft_exact(NULL, a->kb + d0, a->vb + d0, a->w, a->ldw, a->s, t, T, D);
        for (d0 = 0; d0 < D; d0 += VIT__VW) {
            int n = D - d0 < VIT__VW ? D - d0 : VIT__VW;
            vit__v_store_part(yt + d0, vit__v_mul(vit__v_sigmoid(vit__v_load_part(a->qb + (size_t)t * D + d0, n, 0.0f)),
                                                  vit__v_load_part(nt + d0, n, 0.0f)), n);
        }
    }
}

/* att[d][t][t'] = E[t][t'] G[t'][d] / den[t][d], rows [r0, r1) of D * T. */
static void vit__aft_att_rows(const void *ctx, int r0, int r1, int thread) {
    const vit__aftk *a = (const vit__aftk *)ctx;
    int T = a->T, D = a->D, dt;
    (void)thread;
    for (dt = r0; dt < r1; dt++) {
        int d1 = dt / T, t1 = dt % T, u;
        float *ar = a->att + ((size_t)a->bi * D * T + dt) * T, den = a->nd[(size_t)t1 * 2 * D + D + d1];
        const float *Et = a->E + (size_t)t1 * T, *Gd = a->gv + (size_t)(D + d1) * T;
        if (!(den >= VIT__AFT_TINY)) {
            vit__aft_exact(ar, a->kb + d1, a->vb + d1, a->w, a->ldw, a->s, t1, T, D);
            continue;
        }
        for (u = 0; u < T; u += VIT__VW) {
            int n = T - u < VIT__VW ? T - u : VIT__VW;
            vit__v_store_part(
                ar + u,
                vit__v_div(vit__v_mul(vit__v_load_part(Et + u, n, 0.0f), vit__v_load_part(Gd + u, n, 0.0f)),
                           vit__v_set1(den)),
                n);
        }
    }
}

VITDEF void vit_k_aft(float *y, float *att, float *scratch, const float *q, const float *k, const float *v,
                      const float *w, const vit_aft_shape *sh) {
    vit__aftk a;
    int B = sh->B, T = sh->T, D = sh->D, bi, t, d;
    a.att = att;
    a.E = scratch;
    a.gv = a.E + (size_t)T * T;
    a.nd = a.gv + (size_t)2 * D * T;
    a.km = a.nd + (size_t)T * 2 * D;
    a.w = w; a.T = T; a.D = D; a.ldw = sh->ldw; a.s = sh->s;
    vit__parallel(T, vit__par_threads((double)T * T), vit__aft_e_rows, &a);
    for (bi = 0; bi < B; bi++) {
        a.bi = bi;
        a.qb = q + (size_t)bi * T * D;
        a.kb = k + (size_t)bi * T * D;
        a.vb = v + (size_t)bi * T * D;
        a.yb = y + (size_t)bi * T * D;
        /* km[d] = max_t k[t][d] */
        memcpy(a.km, a.kb, (size_t)D * sizeof(float));
        for (t = 1; t < T; t++)
            for (d = 0; d < D; d += VIT__VW) {
                int n = D - d < VIT__VW ? D - d : VIT__VW;
                vit__v_store_part(a.km + d,
                                  vit__v_max(vit__v_load_part(a.km + d, n, 0.0f),
                                             vit__v_load_part(a.kb + (size_t)t * D + d, n, 0.0f)),
                                  n);
            }
        vit__parallel(T, vit__par_threads((double)T * D), vit__aft_gv_cols, &a);
        /* nd (T, 2D) = E . gv^T: numerators, then denominators */
        vit_k_matmul(a.nd, a.E, a.gv, NULL, T, T, 2 * D);
        vit__parallel(T, vit__par_threads((double)T * D), vit__aft_out_rows, &a);
        if (att) vit__parallel(D * T, vit__par_threads((double)D * T * T), vit__aft_att_rows, &a);
    }
}

/* Columns of VIT__VW features side by side: max, then both sums, then the
   outputs; the last, partial vector is padded. */
/* Tasks [t0, t1) of B * (column blocks). */
static void vit__aft_simple_cols(const void *ctx, int t0, int t1, int thread) {
    const vit__aftk *a = (const vit__aftk *)ctx;
    float *y = a->yb, *att = a->att;
    int T = a->T, D = a->D, nblk = (D + VIT__VW - 1) / VIT__VW, task;
    (void)thread;
    for (task = t0; task < t1; task++) {
        int bi = task / nblk, d0 = task % nblk * VIT__VW, n = D - d0 < VIT__VW ? D - d0 : VIT__VW, t, j;
        size_t off = (size_t)bi * T * D + d0;
        const float *qb = a->qb + off, *kb = a->kb + off, *vb = a->vb + off;
        vit__vf m = vit__v_load_part(kb, n, 0.0f), num = vit__v_zero(), den = vit__v_zero(), r;
        for (t = 1; t < T; t++) m = vit__v_max(m, vit__v_load_part(kb + (size_t)t * D, n, 0.0f));
        for (t = 0; t < T; t++) {
            vit__vf e = vit__v_exp(vit__v_sub(vit__v_load_part(kb + (size_t)t * D, n, 0.0f), m));
            num = vit__v_add(num, vit__v_mul(e, vit__v_load_part(vb + (size_t)t * D, n, 0.0f)));
            den = vit__v_add(den, e);
        }
        r = vit__v_div(num, den);
        for (t = 0; t < T; t++)
            vit__v_store_part(y + off + (size_t)t * D,
                              vit__v_mul(vit__v_sigmoid(vit__v_load_part(qb + (size_t)t * D, n, 0.0f)), r), n);
        if (att)
            for (t = 0; t < T; t++) {
                float p[VIT__VW];
                vit__v_store(p,
                             vit__v_div(vit__v_exp(vit__v_sub(vit__v_load_part(kb + (size_t)t * D, n, 0.0f), m)), den));
                for (j = 0; j < n; j++) att[((size_t)bi * D + d0 + j) * T + t] = p[j];
            }
    }
}

VITDEF void vit_k_aft_simple(float *y, float *att, const float *q, const float *k, const float *v, int B, int T,
                             int D) {
    vit__aftk a;
    memset(&a, 0, sizeof a);
    a.yb = y; a.att = att; a.qb = q; a.kb = k; a.vb = v; a.T = T; a.D = D;
    vit__parallel(B * ((D + VIT__VW - 1) / VIT__VW), vit__par_threads((double)B * T * D), vit__aft_simple_cols, &a);
}
#else
VITDEF void vit_k_aft(float *y, float *att, float *scratch, const float *q, const float *k, const float *v,
                      const float *w, const vit_aft_shape *sh) {
    (void)scratch;
    vit_k_aft_ref(y, att, q, k, v, w, sh);
}
VITDEF void vit_k_aft_simple(float *y, float *att, const float *q, const float *k, const float *v, int B, int T,
                             int D) {
    vit_k_aft_simple_ref(y, att, q, k, v, B, T, D);
}
#endif

/* ---- kernels: outlook attention ---- */
/* "VOLO: Vision Outlooker for Visual Recognition" (Yuan et al. 2021). At
   each of the L window positions, head h has a (K^2, K^2) attention A
   (softmax of the scaled logits, row by row); the window's K^2 values v
   (zero where the window hangs over the padding) become A v, and fold adds
   every window's K^2 outputs back at their pixels. Each output pixel sums
   over windows in order, each window's product over its K^2 values in
   order, in both versions; the fast one runs VIT__VW channels at once. */

/* The logits' scale p->scale, or HS^-0.5 when it is 0 (VOLO's default). */
static float vit__outlook_scale(const vit_outlook_params *p) {
    return p->scale != 0.0f ? p->scale : 1.0f / sqrtf((float)(p->dim / p->heads));
}

VITDEF void vit_k_outlook_ref(float *y, float *att, const float *logits, const float *v, int B, int H, int W,
                              const vit_outlook_params *p) {
    int C = p->dim, NH = p->heads, K = p->kernel_size, pad = p->padding, stride = p->stride;
    float scale = vit__outlook_scale(p);
    int Lh = (H + 2 * pad - K) / stride + 1, Lw = (W + 2 * pad - K) / stride + 1, L = Lh * Lw, KK = K * K, HS = C / NH;
    int bi, h, l, a, c, d;
    memset(y, 0, (size_t)B * H * W * C * sizeof(float));
    for (bi = 0; bi < B; bi++)
        for (h = 0; h < NH; h++)
            for (l = 0; l < L; l++) {
                int oy = l / Lw * stride - pad, ox = l % Lw * stride - pad;
                float *A = att + (((size_t)bi * NH + h) * L + l) * KK * KK;
                const float *lg = logits + (((size_t)bi * L + l) * NH + h) * KK * KK;
                for (a = 0; a < KK * KK; a++) A[a] = scale * lg[a];
                vit_k_softmax_ref(A, A, KK, KK);
                for (a = 0; a < KK; a++) {
                    int py = oy + a / K, px = ox + a % K;
                    if (py < 0 || py >= H || px < 0 || px >= W) continue; /* fold drops the padding */
                    for (d = 0; d < HS; d++) {
                        float s = 0.0f;
                        for (c = 0; c < KK; c++) {
                            int qy = oy + c / K, qx = ox + c % K;
                            if (qy < 0 || qy >= H || qx < 0 || qx >= W) continue; /* unfold's zeros */
                            s += A[(size_t)a * KK + c] * v[(((size_t)bi * H + qy) * W + qx) * C + h * HS + d];
                        }
                        y[(((size_t)bi * H + py) * W + px) * C + h * HS + d] += s;
                    }
                }
            }
}

#ifndef VIT_NO_SIMD
/* One task per (batch, head): it alone writes that head's channels. The
   head's L softmaxes run first, as one block when rows are shorter than a
   vector. A window's pixels inside the image form a rectangle [ky0, ky1)
   x [kx0, kx1) of its K x K taps, so the loops run over that rectangle
   with no test per tap, in the _ref's order (padding adds nothing there). */
typedef struct vit__outlookk {
    float *y, *att;
    const float *logits, *v;
    int H, W;
    const vit_outlook_params *p;
} vit__outlookk;

/* Tasks [t0, t1) of B * NH. */
static void vit__outlook_heads(const void *ctx, int t0, int t1, int thread) {
    const vit__outlookk *o = (const vit__outlookk *)ctx;
    const vit_outlook_params *p = o->p;
    float *y = o->y, *att = o->att;
    const float *logits = o->logits, *v = o->v;
    int H = o->H, W = o->W, C = p->dim, NH = p->heads, K = p->kernel_size, pad = p->padding, stride = p->stride;
    float scale = vit__outlook_scale(p);
    int Lh = (H + 2 * pad - K) / stride + 1, Lw = (W + 2 * pad - K) / stride + 1, L = Lh * Lw, KK = K * K, HS = C / NH,
        task;
    (void)thread;
    for (task = t0; task < t1; task++) {
        int bi = task / NH, h = task % NH, l, i;
        float *Ah = att + (size_t)task * L * KK * KK;

        /* this head's channels of y start at zero: overlapping windows add into them */
        for (i = 0; i < H * W; i++) memset(y + ((size_t)bi * H * W + i) * C + h * HS, 0, (size_t)HS * sizeof(float));

        /* the head's (K^2, K^2) attention at every window */
        for (l = 0; l < L; l++) {
            const float *lg = logits + (((size_t)bi * L + l) * NH + h) * KK * KK;
            if (KK < VIT__VW) vit__softmax_shift(Ah + (size_t)l * KK * KK, lg, KK, KK, scale);
            else vit__softmax_rows(Ah + (size_t)l * KK * KK, lg, KK, KK, scale);
        }
        if (KK < VIT__VW) vit__softmax_finish(Ah, L * KK, KK);

        /* fold: every window adds A v at its pixels */
        for (l = 0; l < L; l++) {
            int oy = l / Lw * stride - pad, ox = l % Lw * stride - pad, ay, ax, cy, cx, d0;
            int ky0 = oy < 0 ? -oy : 0, ky1 = oy + K > H ? H - oy : K, kx0 = ox < 0 ? -ox : 0,
                kx1 = ox + K > W ? W - ox : K;
            const float *A = Ah + (size_t)l * KK * KK, *vb = v + (size_t)bi * H * W * C + h * HS;
            for (ay = ky0; ay < ky1; ay++)
                for (ax = kx0; ax < kx1; ax++) {
                    const float *Aa = A + (size_t)(ay * K + ax) * KK;
                    float *yp = y + (((size_t)bi * H + oy + ay) * W + ox + ax) * C + h * HS;
                    /* two vectors of channels at a time: two independent FMA chains */
                    for (d0 = 0; d0 < HS; d0 += 2 * VIT__VW) {
                        int n0 = HS - d0 < VIT__VW ? HS - d0 : VIT__VW, n1 = HS - d0 - VIT__VW;
                        vit__vf acc0 = vit__v_zero(), acc1 = vit__v_zero();
                        n1 = n1 < 0 ? 0 : n1 < VIT__VW ? n1 : VIT__VW;
                        for (cy = ky0; cy < ky1; cy++) {
                            /* vr: the first tap inside the image on this row */
                            const float *vr = vb + ((size_t)(oy + cy) * W + ox + kx0) * C + d0, *Ar = Aa + cy * K;
                            if (n1 == VIT__VW)
                                for (cx = kx0; cx < kx1; cx++) {
                                    vit__vf a = vit__v_set1(Ar[cx]);
                                    acc0 = vit__v_fma(a, vit__v_load(vr + (size_t)(cx - kx0) * C), acc0);
                                    acc1 = vit__v_fma(a, vit__v_load(vr + (size_t)(cx - kx0) * C + VIT__VW), acc1);
                                }
                            else
                                for (cx = kx0; cx < kx1; cx++) {
                                    vit__vf a = vit__v_set1(Ar[cx]);
                                    acc0 = vit__v_fma(a, vit__v_load_part(vr + (size_t)(cx - kx0) * C, n0, 0.0f), acc0);
                                    if (n1)
                                        acc1 = vit__v_fma(
                                            a, vit__v_load_part(vr + (size_t)(cx - kx0) * C + VIT__VW, n1, 0.0f), acc1);
                                }
                        }
                        vit__v_store_part(yp + d0, vit__v_add(vit__v_load_part(yp + d0, n0, 0.0f), acc0), n0);
                        if (n1)
                            vit__v_store_part(yp + d0 + VIT__VW,
                                              vit__v_add(vit__v_load_part(yp + d0 + VIT__VW, n1, 0.0f), acc1), n1);
                    }
                }
        }
    }
}

VITDEF void vit_k_outlook(float *y, float *att, const float *logits, const float *v, int B, int H, int W,
                          const vit_outlook_params *p) {
    int K = p->kernel_size, KK = K * K;
    int L = ((H + 2 * p->padding - K) / p->stride + 1) * ((W + 2 * p->padding - K) / p->stride + 1);
    vit__outlookk o;
    o.y = y; o.att = att; o.logits = logits; o.v = v; o.H = H; o.W = W; o.p = p;
    vit__parallel(B * p->heads, vit__par_threads((double)B * L * KK * KK * p->dim), vit__outlook_heads, &o);
}
#else
VITDEF void vit_k_outlook(float *y, float *att, const float *logits, const float *v, int B, int H, int W,
                          const vit_outlook_params *p) {
    vit_k_outlook_ref(y, att, logits, v, B, H, W, p);
}
#endif

/* ---- modules: shared checks ---- */

/* A dense weight as the products will read it: F32 in data, BF16 in q,
   I8 in q with its row scales, and a packing record (vit_tensor.pack)
   only the loader's for a weight of this type and shape in this build.
   Weights a program builds by hand are checked here, where modules take
   them; the loader's are right by construction. */
static vit_result vit__w_ok(const char *mod, const char *name, const vit_tensor *t) {
    const char *why = NULL;
    if (t->dtype == VIT_DTYPE_F32 && !t->data) why = "is F32 with data NULL";
    else if (t->dtype != VIT_DTYPE_F32 && t->dtype != VIT_DTYPE_BF16 && t->dtype != VIT_DTYPE_I8)
        why = "has an unknown dtype";
    else if (t->dtype != VIT_DTYPE_F32 && !t->q)
        why = t->dtype == VIT_DTYPE_I8 ? "is I8 with q NULL" : "is BF16 with q NULL";
    else if (t->dtype == VIT_DTYPE_I8 && !t->scale) why = "is I8 with scale NULL";
    else if (t->dtype == VIT_DTYPE_I8 && t->act_bits && t->act_bits != 8 && t->act_bits != 7)
        why = "is I8 with act_bits neither 8 nor 7";
    else if (t->pack && (t->ndim != 2 || t->pack->panel != vit__panel_rows(t->dtype, t->shape[1]) ||
                         t->shape[0] < t->pack->panel || (t->dtype == VIT_DTYPE_I8) != (t->pack->sums != NULL)))
        why = "has a packing (vit_tensor.pack) that is not this weight's";
    return why ? vit__fail(VIT_ERR_ARG, "%s: weight %s %s", mod, name, why) : VIT_OK;
}

/* vit__w_ok on n pairs of (const char *name, const vit_tensor *t). */
static vit_result vit__ws_ok(const char *mod, int n, ...) {
    vit_result r = VIT_OK;
    va_list ap;
    va_start(ap, n);
    for (; n > 0 && r == VIT_OK; n--) {
        const char *name = va_arg(ap, const char *);
        r = vit__w_ok(mod, name, va_arg(ap, const vit_tensor *));
    }
    va_end(ap);
    return r;
}

static vit_result vit__need3(const vit_tensor *x, const char *mod, int32_t C) {
    char s[64];
    if (!x || !x->data) return vit__fail(VIT_ERR_ARG, "%s: input is NULL", mod);
    if (x->ndim != 3 || (C > 0 && x->shape[2] != C))
        return C > 0 ? vit__fail(VIT_ERR_SHAPE, "%s: input has shape %s, expected (B, N, %d)", mod,
                                 vit_tensor_shape_str(x, s, sizeof s), (int)C)
                     : vit__fail(VIT_ERR_SHAPE, "%s: input has shape %s, expected (B, N, C)", mod,
                                 vit_tensor_shape_str(x, s, sizeof s));
    return VIT_OK;
}

/* x must be 4-D with C channels at dim 1 (channels_last: dim 3); C <= 0
   accepts any. */
static vit_result vit__need4(const vit_tensor *x, const char *mod, int32_t C, int channels_last) {
    char s[64];
    if (!x || !x->data) return vit__fail(VIT_ERR_ARG, "%s: input is NULL", mod);
    if (x->ndim != 4 || (C > 0 && x->shape[channels_last ? 3 : 1] != C))
        return C <= 0          ? vit__fail(VIT_ERR_SHAPE, "%s: input has shape %s, expected (B, C, H, W)", mod,
                                           vit_tensor_shape_str(x, s, sizeof s))
               : channels_last ? vit__fail(VIT_ERR_SHAPE, "%s: input has shape %s, expected (B, H, W, %d)", mod,
                                           vit_tensor_shape_str(x, s, sizeof s), (int)C)
                               : vit__fail(VIT_ERR_SHAPE, "%s: input has shape %s, expected (B, %d, H, W)", mod,
                                           vit_tensor_shape_str(x, s, sizeof s), (int)C);
    return VIT_OK;
}

/* Activations are indexed with int inside the kernels; refuse inputs whose
   largest buffer would not fit. B: the batch, for the hint (0: not known). */
static vit_result vit__fits(double elems, int32_t B, const char *what) {
    if (elems > (double)INT_MAX)
        return vit__fail(VIT_ERR_OVERFLOW, "%s: a buffer of %.0f elements is past the %d vit.h indexes; %s", what,
                         elems, INT_MAX,
                         B > 1    ? "use a smaller batch"
                         : B == 1 ? "the input is too large even alone"
                                  : "use a smaller batch or input");
    return VIT_OK;
}

/* Of n slots of scratch, each `bytes`, for the threads that will run a
   step: as many as a's room holds (at least 1). An arena sized while fewer
   threads were set than later run gets fewer slots (the step then runs on
   fewer threads), never an overflow. */
static int vit__arena_slots(const vit_arena *a, size_t bytes, int n) {
    if (bytes && !vit_arena_counting(a)) { /* (no scratch: as many as asked) */
        size_t start = vit__arena_next(a), room = a->size > start && start >= a->used ? a->size - start : 0;
        if (room / bytes < (size_t)n) n = room / bytes > 1 ? (int)(room / bytes) : 1;
    }
    return n;
}

/* Scratch for vit__attention, one slot per thread that will run it (vit__arena_slots). */
static vit_result vit__att_scratch(vit_arena *a, int N, int HS, int keep, int lowp, int tasks, float **buf,
                                   int *slots) {
    size_t bytes = vit__att_slot(N, HS, keep, lowp) * sizeof(float), total;
    int n = vit__threads();
    if (n > tasks) n = tasks;
    n = vit__arena_slots(a, bytes, n);
    if (!vit__mul_ok(bytes, (size_t)n, &total)) return vit__fail(VIT_ERR_OVERFLOW, "attention scratch: size overflows");
    if (!(*buf = (float *)vit_arena_alloc(a, total))) return VIT_ERR_OOM;
    *slots = n;
    return VIT_OK;
}

/* ---- modules: the loader's hooks ----
   Each module's section ends with what the loader needs for a file of its
   kind (VIT_KINDS names them):
     vit__<name>_keys      the metadata it reads: key, type, range, field
     vit__<name>_names     its weight naming schemes, a vit__<name>_naming
                           each, led by the name a file gives in "naming"
     vit__<name>_check     coherence of the params the keys filled (and
                           keys that only some settings need)
     vit__<name>_bind      binds every weight tensor through vit__bind*
     vit__<name>_run       vit_model_forward for the kind
     vit__<name>_describe  what it computes and takes (vit_model_describe)
     vit__<name>_input     its input shape (vit_model_input_shape)
   The binders are defined with the safetensors reader further down. */

typedef struct vit__ld vit__ld;

typedef struct vit__key {
    const char *key;   /* the metadata key */
    char type;         /* 'i' int32 in [lo, hi]; 'f' float in [lo, hi]; 'p' float in (lo, hi);
                          'e' the index in `words` of the word given, as an int32 enum */
    double lo, hi;     /* the range ('e': unused) */
    size_t off;        /* where it goes: offsetof(vit_model, the field) */
    const char *words; /* 'e': the words, comma-separated, in enum order */
    const char *old;   /* the key files before vit.h 0.2 used, or NULL */
    int opt;           /* 1: files may leave it out (keys added after the kind), then def */
    double def;
} vit__key;

#define VIT__INT(key, lo, hi, field) {key, 'i', lo, hi, offsetof(vit_model, field), NULL, NULL, 0, 0}
#define VIT__REAL(key, lo, hi, field) {key, 'f', lo, hi, offsetof(vit_model, field), NULL, NULL, 0, 0}
#define VIT__ENUM(key, words, field) {key, 'e', 0, 0, offsetof(vit_model, field), words, NULL, 0, 0}
#define VIT__INT_OPT(key, lo, hi, def, field) {key, 'i', lo, hi, offsetof(vit_model, field), NULL, NULL, 1, def}
#define VIT__KEYS_END {NULL, 0, 0, 0, 0, NULL, NULL, 0, 0}

/* Text for vit_model_describe, cut at the buffer's end; len counts it all. */
typedef struct vit__buf {
    char *p;
    size_t size, len;
} vit__buf;

VIT__FORMAT(2, 3)
static void vit__bprintf(vit__buf *b, const char *fmt, ...) {
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vit__vsnprintf(b->len < b->size ? b->p + b->len : NULL, b->len < b->size ? b->size - b->len : 0, fmt, ap);
    va_end(ap);
    if (n > 0) b->len += (size_t)n;
}

static vit_result vit__bind(vit__ld *L, vit_tensor *dst, const char *name, int ndim, int64_t d0, int64_t d1, int64_t d2,
                            int64_t d3, const char *why);
static vit_result vit__bind_linear(vit__ld *L, vit_tensor *w, vit_tensor *b, const char *prefix, const char *name,
                                   int32_t out, int32_t in, const char *why);
static vit_result vit__bind_ln(vit__ld *L, vit_tensor *w, vit_tensor *b, const char *prefix, const char *name,
                               int32_t C, const char *why);
/* A linear whose bias the file may not have (bias 0: b is left empty). */
static vit_result vit__bind_linear_opt(vit__ld *L, vit_tensor *w, vit_tensor *b, const char *prefix, const char *name,
                                       int32_t out, int32_t in, int bias, const char *why);
static vit_result vit__bind_dense(vit__ld *L, vit_tensor *dst, const char *name, int32_t out, int32_t in,
                                  const char *why);
/* A patch embedding's conv weight (C, cin, P, P): F32 as it is, BF16 and I8 as a dense weight (vit_patch_weights) */
static vit_result vit__bind_conv(vit__ld *L, vit_tensor *dst, const char *name, int32_t C, int32_t cin, int32_t P,
                                 const char *why);
static vit_result vit__own(vit__ld *L, vit_tensor *t, int32_t rows, int32_t cols);
static vit_result vit__own_as(vit__ld *L, vit_tensor *t, int32_t rows, int32_t cols, vit_dtype dt);
static void vit__row_copy(vit_tensor *dst, int32_t to, const vit_tensor *src, int32_t from);
static vit_result vit__ld_pack(vit__ld *L, vit_tensor *t, int ours); /* a kept weight packed for the products */
static int vit__ld_counting(const vit__ld *L); /* 1 while binding only sizes the weights arena */
static const char *vit__ld_src(const vit__ld *L); /* the file's name, for messages */
static int vit__has(const vit__ld *L, const char *name); /* 1 when the file holds tensor `name` */
static const void *vit__naming_of(const vit_model *m); /* the row of m's naming in its kind's table */
static vit_result vit__read_keys(vit__ld *L, const vit__key *keys, vit_model *m); /* the file's values of keys into m */

/* The metadata's name of an activation (VIT__ACT_WORDS). */
static const char *vit__act_name(vit_act act) {
    static const char *const names[] = {"gelu", "relu", "gelu_tanh", "quick_gelu", "silu"};
    return (int)act >= 0 && (int)act < 5 ? names[act] : "?";
}

/* A shape of up to 4 sizes into *ndim and shape. */
static vit_result vit__shape(int32_t *ndim, int32_t *shape, int32_t n, int32_t d0, int32_t d1, int32_t d2, int32_t d3) {
    *ndim = n;
    shape[0] = d0; shape[1] = d1; shape[2] = d2; shape[3] = d3;
    return VIT_OK;
}

/* ---- modules: scaled dot-product attention ---- */
/* "Attention Is All You Need" (Vaswani et al. 2017): attention(query,
   key, value) called as attention(x, x, x), softmax(x x^T / sqrt(C)) x.
   Layout (B, N, C). No weights. */

VITDEF vit_result vit_sdpa_forward(vit_arena *a, const vit_sdpa_params *p, const vit_tensor *x, vit_tensor *out,
                                   vit_tensor *attn) {
    vit_tensor y, att, vt;
    vit_result r;
    int32_t B, N, C;
    size_t mark;
    if (!a || !p || !out) return vit__fail(VIT_ERR_ARG, "sdpa: NULL argument");
    if ((r = vit__need3(x, "sdpa", 0)) != VIT_OK) return r;
    B = x->shape[0]; N = x->shape[1]; C = x->shape[2];
    if ((r = vit__fits((double)B * N * (N > C ? N : C), B, "sdpa")) != VIT_OK) return r;
    if ((r = vit__tensor4(a, &y, 3, B, N, C, 1)) != VIT_OK) return r;
    if ((r = vit__tensor4(a, &att, 3, B, N, N, 1)) != VIT_OK) return r;
    mark = vit_arena_mark(a);
    if ((r = vit__tensor4(a, &vt, 3, B, C, N, 1)) != VIT_OK) return r;
    if (!vit_arena_counting(a))
    {
        vit_attn_shape sh = vit__attn_shape(B, N, 1, C, C, p->scale != 0.0f ? p->scale : 1.0f / sqrtf((float)C), 1.0f);
        vit_k_attention(y.data, att.data, vt.data, x->data, x->data, x->data, &sh);
    }
    vit_arena_rewind(a, mark);
    if (attn) *attn = att;
    *out = y;
    return VIT_OK;
}

/* The loader's hooks (see "modules: the loader's hooks"). */
typedef struct vit__sdpa_naming { const char *naming; } vit__sdpa_naming;
static const vit__sdpa_naming vit__sdpa_names[] = {{"default"}};
static const vit__key vit__sdpa_keys[] = {VIT__KEYS_END};

static vit_result vit__sdpa_check(vit_model *m, vit__ld *L) { (void)m; (void)L; return VIT_OK; }

static vit_result vit__sdpa_bind(vit__ld *L, vit_model *m, const void *names) {
    (void)L;
    (void)m;
    (void)names;
    return VIT_OK;
}

static vit_result vit__sdpa_run(const vit_model *m, vit_arena *a, const vit_tensor *x, const vit_forward_opts *o,
                                vit_tensor *out) {
    return vit_sdpa_forward(a, &m->sdpa, x, out, o ? o->attn : NULL);
}

static void vit__sdpa_describe(const vit_model *m, vit__buf *b) {
    (void)m;
    vit__bprintf(b, "  softmax(x x^T / sqrt(C)) x, no weights\n  input (B, N, C)\n");
}

static vit_result vit__sdpa_input(const vit_model *m, int32_t B, int32_t n, int32_t w, int32_t *ndim, int32_t *shape) {
    (void)m;
    return vit__shape(ndim, shape, 3, B, n, w, 1);
}

/* ---- modules: multi-head attention ---- */
/* "Attention Is All You Need". Matches torch.nn.MultiheadAttention
   (batch_first=True; in_proj_weight, in_proj_bias, out_proj.*), a
   MultiHeadedAttention with separate proj_query/proj_key/proj_value and a
   final linear (stacked at load), the einops ViT's MultiHeadAttention (qkv
   with the q/k/v index varying fastest, reordered at load; projection),
   timm's Attention and transformers' ViTAttention. Layout (B, N, C),
   self-attention. scale_after_softmax = 1 computes the einops ViT's
   softmax(Q K^T) / sqrt(C): scores unscaled, probabilities scaled. */

static vit_result vit__mha_ready(const vit_mha_params *p, const vit_mha_weights *w) {
    if (p->dim < 1 || p->heads < 1 || p->dim % p->heads)
        return vit__fail(VIT_ERR_ARG, "mha: dim %d is not a multiple of heads %d", (int)p->dim, (int)p->heads);
    if (p->qk_norm && (!w->q_norm_w.data || !w->q_norm_b.data || !w->k_norm_w.data || !w->k_norm_b.data))
        return vit__fail(VIT_ERR_ARG, "mha: qk_norm's weights not set");
    if (w->rel_bias.data &&
        (!w->rel_index || w->rel_n < 1 || w->rel_bias.ndim != 2 || w->rel_bias.shape[0] != p->heads))
        return vit__fail(VIT_ERR_ARG, "mha: rel_bias wants a (heads, R) table, rel_index and rel_n");
    if (w->rope && ((p->dim / p->heads) % 2 || w->rope_first < 0 || w->rope_n < 0))
        return vit__fail(VIT_ERR_ARG, "mha: rope wants an even head size, rope_first and rope_n");
    if (w->norm_w.data && (!w->norm_b.data || p->qk_eps <= 0.0f))
        return vit__fail(VIT_ERR_ARG, "mha: norm_w wants norm_b and qk_eps, its epsilon");
    return vit__ws_ok("mha", 2, "qkv_w", &w->qkv_w, "out_w", &w->out_w);
}

/* The rotary embedding of table cs (w->rope's layout: shared by the heads
   or one per head) on the rope_n rows of x, NH heads of HS from column 0. */
static void vit__rope_apply(float *x, const vit_mha_weights *w, const float *cs, int32_t NH, int32_t HS, int32_t ld) {
    int32_t h, n = w->rope_heads ? 1 : NH;
    for (h = 0; h < (w->rope_heads ? NH : 1); h++) {
        const float *t = cs + (size_t)h * w->rope_n * 2 * HS;
        if (w->rope_half) vit_k_rope_half(x + (size_t)h * HS, t, w->rope_n, n, HS, ld);
        else vit_k_rope(x + (size_t)h * HS, t, w->rope_n, n, HS, ld);
    }
}

/* q and k of qkv (B*N, 3C) in place as the attention reads them: each
   head's LayerNorm (qk-norm), then the rotary embedding (EVA-02) on every
   token after the first rope_first. The reverse pass makes them again. */
static void vit__mha_qk(float *qkv, const vit_mha_params *p, const vit_mha_weights *w, int32_t B, int32_t N) {
    int32_t C = p->dim, NH = p->heads, HS = C / NH, t;
    for (t = 0; p->qk_norm && t < B * N; t++) {
        float *q = qkv + (size_t)t * 3 * C;
        vit_k_layernorm(q, q, w->q_norm_w.data, w->q_norm_b.data, NH, HS, p->qk_eps);
        vit_k_layernorm(q + C, q + C, w->k_norm_w.data, w->k_norm_b.data, NH, HS, p->qk_eps);
    }
    for (t = 0; w->rope && t < B; t++) {
        float *q = qkv + ((size_t)t * N + w->rope_first) * 3 * C;
        vit__rope_apply(q, w, w->rope, NH, HS, 3 * C);
        vit__rope_apply(q + C, w, w->rope, NH, HS, 3 * C);
    }
}

/* 1 when a BF16 attention's q, k and v come as bf16 from the qkv product's tiles (vit__mm.yb: the bits the
   attention's conversion of them would give), read by it in place of floats (vit__att.qh, kh, vh): half the bytes
   to memory and back, and no conversion of them in each head's task (HS even: a head's pairs its own). Not where
   qk-norm or rotary work on them first as floats. ViT-B/16 BF16, its 12 attention blocks with their products, one
   thread, four alternating runs (with VIT__ATT_PF's 16): B = 8 228-235 -> 220-229 ms, B = 1 28.2-28.8 -> 27.9-28.5
   ms. */
static int vit__mha_qb(const vit_mha_params *p, const vit_mha_weights *w, int32_t rows) {
#if VIT__DOT_BF16
    int32_t C = p->dim, HS = C / p->heads;
    vit__mm qp;
    if (vit__att_mode(w->qkv_w.dtype == VIT_DTYPE_BF16) != 1 || HS % 2 || p->qk_norm || w->rope) return 0;
    qp = vit__mm_w(NULL, NULL, &w->qkv_w, NULL, rows, C, 3 * C, NULL);
    return vit__mm_yb(&qp);
#else
    (void)p; (void)w; (void)rows;
    return 0;
#endif
}

/* 1 when an I8 attention's q and k come in int8 and v as bf16 from the qkv product's tiles (vit__mm_q8,
   vit__q8_att_out: the bits of its own conversions of them), read by it in place of floats: heads of 2 NR (64 on
   AVX-512), each one wide tile's two panels, and not where qk-norm or rotary work on q and k first as floats. */
static int vit__mha_q8(const vit_mha_params *p, const vit_mha_weights *w, int32_t rows) {
#if VIT__DOT_BF16 && VIT__DOT_I8
    int32_t C = p->dim, HS = C / p->heads;
    vit__mm qp;
    if (w->qkv_w.dtype != VIT_DTYPE_I8 || vit__att_mode(2) != 2 || HS != 2 * VIT__NR || p->qk_norm || w->rope)
        return 0;
    qp = vit__mm_w(NULL, NULL, &w->qkv_w, NULL, rows, C, 3 * C, NULL);
    return vit__mm_q8(&qp);
#else
    (void)p; (void)w; (void)rows;
    return 0;
#endif
}

/* y (B*N, C) from x (B*N, C); e: the output projection's epilogue (the
   encoder block's layer scale and residual), or NULL. att: where to keep
   the probabilities, or NULL for scratch released on return. */
static vit_result vit__mha_core(vit_arena *a, const vit_mha_params *p, const vit_mha_weights *w,
                               const float *x, int32_t ldx, const vit__ln *ln, float *y, const vit__epi *e, float *att,
                               int32_t B, int32_t N) {
    /* ldo: floats between rows of the heads' output, the projection's x (vit__ld_x) */
    int32_t C = p->dim, NH = p->heads, HS = C / NH, ldo = vit__ld_x(C);
    size_t mark = vit_arena_mark(a);
    vit_tensor qkv, ao, q8s;
    vit_result r;
    void *xs;
    float scale = p->scale_after_softmax ? 1.0f : 1.0f / sqrtf((float)HS), *scratch = NULL;
    float post = p->scale_after_softmax ? 1.0f / sqrtf((float)C) : 1.0f;
    int slots = 1, tiles, per;
    int lowp = vit__att_mode(w->qkv_w.dtype == VIT_DTYPE_I8 ? 2 : w->qkv_w.dtype == VIT_DTYPE_BF16);
    /* BF16 attention into a BF16 projection on the dot-product tiles: the heads' output rows go to the
       projection's x as bf16 (vit__att.ob, in the scratch the qkv product's x was converted into and is done
       with: the same rows of C), the bits its conversion of them gives, never in memory as floats. Not with a
       norm between (EVA-CLIP) or heads of an odd size (a pair of bf16 two heads') or on the AMX tiles (their
       x has zero rows past M, which this would leave to the qkv product's conversion). */
#if VIT__DOT_BF16 && !VIT__AMX_BUILD
    int fuse = lowp == 1 && w->out_w.dtype == VIT_DTYPE_BF16 && !w->norm_w.data && HS % 2 == 0;
#else
    int fuse = 0;
#endif
    int qfuse = vit__mha_qb(p, w, B * N), q8 = vit__mha_q8(p, w, B * N);
    if ((r = vit__fits((double)B * N * 3 * C, B, "mha")) != VIT_OK ||
        (att && (r = vit__fits((double)B * NH * N * N, B, "mha attention")) != VIT_OK))
        return r;
    if (w->rel_bias.data && N != w->rel_n)
        return vit__fail(VIT_ERR_SHAPE, "mha: %d tokens, but the relative position bias is for %d", (int)N,
                         (int)w->rel_n);
    if (w->rope && N != w->rope_first + w->rope_n)
        return vit__fail(VIT_ERR_SHAPE, "mha: %d tokens, but the rotary embedding is for %d after %d", (int)N,
                         (int)w->rope_n, (int)w->rope_first);
    vit__att_tiles(N, lowp, &tiles, &per);
    if ((r = vit__tensor4(a, &qkv, 3, B, N, qfuse || q8 ? (3 * C + 1) / 2 : 3 * C, 1)) != VIT_OK) return r;
    if (q8 && (r = vit__tensor4(a, &q8s, 3, B, N, 2 * NH, 1)) != VIT_OK) return r;
    if (!fuse && (r = vit__tensor4(a, &ao, 3, B, N, ldo, 1)) != VIT_OK) return r;
    if ((r = vit__scratch(a, vit__dense_scratch(vit__dense_scratch(0, &w->qkv_w, B * N, C), &w->out_w, B * N, C),
                          &xs)) != VIT_OK)
        return r;
    /* last: its slots take what room the arena has left (vit__arena_slots) */
    if ((r = vit__att_scratch(a, N, HS, att != NULL, lowp, B * NH * tiles, &scratch, &slots)) != VIT_OK) return r;
    if (!vit_arena_counting(a)) {
        float *aod = fuse ? NULL : ao.data;
        vit__mm out = vit__mm_w(y, aod, &w->out_w, w->out_b.data, B * N, C, C, xs),
               qp = vit__mm_w(qfuse || q8 ? NULL : qkv.data, x, &w->qkv_w, w->qkv_b.data, B * N, C, 3 * C, xs);
        vit_attn_shape sh = vit__attn_shape(B, N, NH, HS, 3 * C, scale, post);
        vit__att at = vit__att_of(aod, att, qkv.data, qkv.data + C, qkv.data + 2 * C, &sh);
        at.ldo = ldo;
        out.ldx = ldo;
        if (fuse) {
            at.ob = (uint16_t *)xs;
            at.ldob = (int)(vit__mm_scratch(VIT_DTYPE_BF16, 1, C) / 2);
            out.xs_ld = at.ldob / 2;
        }
        if (qfuse || q8) {
            qp.yb = (uint16_t *)(void *)qkv.data;
            qp.ldyb = 3 * C;
            at.qh = qp.yb;
            at.kh = qp.yb + C;
            at.vh = qp.yb + 2 * C;
        }
        if (q8) at.q8s = qp.yqs = q8s.data;
        at.lowp = lowp;
        at.bias = w->rel_bias.data; /* BEiT's relative position bias, added to the scores before the softmax */
        at.bidx = w->rel_index;
        at.R = w->rel_bias.data ? w->rel_bias.shape[1] : 0;

        /* q, k, v in one product (of LN(x) with ln), then qk-norm and the rotary embedding */
        qp.ln = ln;
        qp.ldx = ldx;
        vit__matmul(&qp);
        vit__mha_qk(qkv.data, p, w, B, N);

        /* attention (EVA-CLIP: a LayerNorm on its output), then the output projection with the caller's epilogue */
        vit__attention(&at, scratch, slots);
        if (w->norm_w.data)
            vit__layernorm_ld(ao.data, ldo, ao.data, ldo, w->norm_w.data, w->norm_b.data, B * N, C, p->qk_eps);
        out.e = e;
        vit__matmul(&out);
    }
    vit_arena_rewind(a, mark);
    return VIT_OK;
}

VITDEF vit_result vit_mha_forward(vit_arena *a, const vit_mha_params *p, const vit_mha_weights *w, const vit_tensor *x,
                                  vit_tensor *out, vit_tensor *attn) {
    vit_tensor y, att;
    vit_result r;
    if (!a || !p || !w || !out) return vit__fail(VIT_ERR_ARG, "mha: NULL argument");
    if ((r = vit__mha_ready(p, w)) != VIT_OK || (r = vit__need3(x, "mha", p->dim)) != VIT_OK) return r;
    if ((r = vit__tensor4(a, &y, 3, x->shape[0], x->shape[1], p->dim, 1)) != VIT_OK) return r;
    if (attn && (r = vit__tensor4(a, &att, 4, x->shape[0], p->heads, x->shape[1], x->shape[1])) != VIT_OK) return r;
    if ((r = vit__mha_core(a, p, w, x->data, p->dim, NULL, y.data, NULL, attn ? att.data : NULL, x->shape[0],
                           x->shape[1])) != VIT_OK)
        return r;
    if (attn) *attn = att;
    *out = y;
    return VIT_OK;
}

/* The loader's hooks. Three layouts of q, k and v, all brought to
   nn.MultiheadAttention's at load: PACKED one (3C, C) matrix, rows q, k,
   v; INTERLEAVED one matrix whose rows run (head, lane, q/k/v), q/k/v
   fastest (the einops ViT's "b n (h d qkv)"); SEPARATE three linears. */
enum { VIT__QKV_PACKED = 0, VIT__QKV_INTERLEAVED, VIT__QKV_SEPARATE };

typedef struct vit__mha_naming {
    const char *naming;
    int layout;                      /* VIT__QKV_* */
    const char *w, *b;               /* PACKED, INTERLEAVED: the matrix and bias */
    const char *q, *k, *v;           /* SEPARATE: the three linears */
    const char *out;                 /* the output projection */
    const char *q_norm, *k_norm;     /* qk-norm's LayerNorms, or NULL */
    const char *q_bias, *v_bias;     /* PACKED: q's and v's biases apart, k none (BEiT), or NULL: b */
    const char *rel;                 /* a relative position bias table (R, NH) per layer, or NULL */
    int no_k_bias;                   /* SEPARATE: k has no bias where q and v have theirs (EVA-02) */
    const char *norm;                /* a LayerNorm on the heads' output before `out` (EVA-CLIP), or NULL */
} vit__mha_naming;

static const vit__mha_naming vit__mha_names[] = {
    {"nn", VIT__QKV_PACKED, "in_proj_weight", "in_proj_bias", NULL, NULL, NULL, "out_proj", NULL, NULL, NULL, NULL,
     NULL, 0, NULL},
    {"einops", VIT__QKV_INTERLEAVED, "qkv.weight", "qkv.bias", NULL, NULL, NULL, "projection", NULL, NULL, NULL, NULL,
     NULL, 0, NULL},
    {"proj_qkv", VIT__QKV_SEPARATE, NULL, NULL, "proj_query", "proj_key", "proj_value", "final", NULL, NULL, NULL,
     NULL, NULL, 0, NULL},
    {"timm", VIT__QKV_PACKED, "qkv.weight", "qkv.bias", NULL, NULL, NULL, "proj", "q_norm", "k_norm", NULL, NULL,
     NULL, 0, NULL},
    {"transformers", VIT__QKV_SEPARATE, NULL, NULL, "attention.query", "attention.key", "attention.value",
     "output.dense", NULL, NULL, NULL, NULL, NULL, 0, NULL},
    {"hf_clip", VIT__QKV_SEPARATE, NULL, NULL, "q_proj", "k_proj", "v_proj", "out_proj", NULL, NULL, NULL, NULL,
     NULL, 0, NULL},
    /* timm's Beit Attention and Eva's fused EvaAttention: qkv without a bias, then q_bias, a zero k bias and
       v_bias; Beit's relative position bias table, EVA-CLIP's LayerNorm before proj */
    {"beit", VIT__QKV_PACKED, "qkv.weight", NULL, NULL, NULL, NULL, "proj", NULL, NULL, "q_bias", "v_bias",
     "relative_position_bias_table", 0, "norm"},
    /* timm's EvaAttention with qkv_fused=False (EVA-02 B/L, EVA-CLIP): k without a bias */
    {"eva_sep", VIT__QKV_SEPARATE, NULL, NULL, "q_proj", "k_proj", "v_proj", "proj", NULL, NULL, NULL, NULL, NULL, 1,
     "norm"},
    /* transformers' BeitAttention (and Data2VecVision's): ViTAttention's names, k without a bias, a relative
       position bias table in the self-attention when each layer has its own */
    {"hf_beit", VIT__QKV_SEPARATE, NULL, NULL, "attention.query", "attention.key", "attention.value", "output.dense",
     NULL, NULL, NULL, NULL, "attention.relative_position_bias.relative_position_bias_table", 1, NULL}};

static const vit__key vit__mha_keys[] = {
    VIT__INT("embed_dim", 1, 65536, mha.dim),
    VIT__INT("num_heads", 1, 65536, mha.heads),
    {"scale_after_softmax", 'i', 0, 1, offsetof(vit_model, mha.scale_after_softmax), NULL, "attn_quirk", 0, 0},
    VIT__KEYS_END};

static vit_result vit__mha_check(vit_model *m, vit__ld *L) {
    const char *src = vit__ld_src(L);
    if (m->mha.dim % m->mha.heads)
        return vit__fail(VIT_ERR_FORMAT, "%s: embed_dim %d is not a multiple of num_heads %d", src, (int)m->mha.dim,
                         (int)m->mha.heads);
    return VIT_OK;
}

/* Binds the attention weights under prefix, in naming nm, into w; bias 0:
   q, k and v have none; qk_norm: LayerNorms of HS under q_norm, k_norm;
   attn_norm: a LayerNorm of C under norm, before the projection. */
static vit_result vit__mha_bind_w(vit__ld *L, vit_mha_weights *w, const char *prefix, const vit__mha_naming *nm,
                                  int32_t C, int32_t NH, int bias, int qk_norm, int attn_norm, const char *why) {
    char n[256];
    vit_result r;
    int counting = vit__ld_counting(L);
    memset(w, 0, sizeof *w);

    /* the output projection and the qk-norm LayerNorms, the same in every layout */
    if ((r = vit__bind_linear(L, &w->out_w, &w->out_b, prefix, nm->out, C, C, why)) != VIT_OK) return r;
    if (qk_norm && ((r = vit__bind_ln(L, &w->q_norm_w, &w->q_norm_b, prefix, nm->q_norm, C / NH, why)) != VIT_OK ||
                    (r = vit__bind_ln(L, &w->k_norm_w, &w->k_norm_b, prefix, nm->k_norm, C / NH, why)) != VIT_OK))
        return r;
    if (attn_norm && !nm->norm)
        return vit__fail(VIT_ERR_FORMAT, "%s: naming %s has no LayerNorm inside the attention", vit__ld_src(L),
                         nm->naming);
    if (attn_norm && (r = vit__bind_ln(L, &w->norm_w, &w->norm_b, prefix, nm->norm, C, why)) != VIT_OK) return r;

    /* separate q, k, v layers: stacked here */
    if (nm->layout == VIT__QKV_SEPARATE) {
        /* Stack q, k, v into one (3C, C) matrix: one GEMM instead of three. */
        vit_tensor qw[3], qb[3];
        const char *parts[3];
        int i;
        parts[0] = nm->q; parts[1] = nm->k; parts[2] = nm->v;
        for (i = 0; i < 3; i++) /* EVA-02: k without a bias */
            if ((r = vit__bind_linear_opt(L, &qw[i], &qb[i], prefix, parts[i], C, C, bias && !(i == 1 && nm->no_k_bias),
                                          why)) != VIT_OK)
                return r;
        w->qkv_w.name = qw[0].name;
        w->qkv_b.name = qb[0].name;
        /* kept BF16 or I8 when all three are, else F32 */
        if ((r = vit__own_as(L, &w->qkv_w, 3 * C, C,
                             qw[0].dtype == qw[1].dtype && qw[1].dtype == qw[2].dtype ? qw[0].dtype : VIT_DTYPE_F32)) !=
                VIT_OK ||
            (bias && (r = vit__own(L, &w->qkv_b, 3 * C, 1)) != VIT_OK))
            return r;
        if (!counting)
            for (i = 0; i < 3 * C; i++) {
                vit__row_copy(&w->qkv_w, i, &qw[i / C], i % C);
                if (bias && qb[i / C].data) vit__row_copy(&w->qkv_b, i, &qb[i / C], i % C);
                else if (bias) w->qkv_b.data[i] = 0.0f;
            }
        return vit__ld_pack(L, &w->qkv_w, 1);
    }

    /* one fused qkv layer, reordered when its rows interleave */
    snprintf(n, sizeof n, "%s%s", prefix, nm->w);
    if ((r = vit__bind_dense(L, &w->qkv_w, n, 3 * C, C, why)) != VIT_OK) return r;
    if (bias && nm->q_bias) {
        /* BEiT: q and v biases apart, k none; one (3C) bias with k's zero, as timm concatenates them */
        vit_tensor qb, vb;
        snprintf(n, sizeof n, "%s%s", prefix, nm->q_bias);
        if ((r = vit__bind(L, &qb, n, 1, C, 0, 0, 0, why)) != VIT_OK) return r;
        snprintf(n, sizeof n, "%s%s", prefix, nm->v_bias);
        if ((r = vit__bind(L, &vb, n, 1, C, 0, 0, 0, why)) != VIT_OK) return r;
        w->qkv_b.name = qb.name;
        if ((r = vit__own(L, &w->qkv_b, 3 * C, 1)) != VIT_OK) return r;
        if (!counting) {
            memcpy(w->qkv_b.data, qb.data, (size_t)C * sizeof(float));
            memset(w->qkv_b.data + C, 0, (size_t)C * sizeof(float));
            memcpy(w->qkv_b.data + 2 * C, vb.data, (size_t)C * sizeof(float));
        }
        return VIT_OK;
    }
    snprintf(n, sizeof n, "%s%s", prefix, nm->b);
    if (bias && (r = vit__bind(L, &w->qkv_b, n, 1, 3 * C, 0, 0, 0, why)) != VIT_OK) return r;
    if (nm->layout == VIT__QKV_INTERLEAVED) {
        /* Row h*3*HS + d*3 + s holds part s (q, k, v) of head h, lane d.
           Reorder the rows to nn.MultiheadAttention's s*C + h*HS + d once,
           here. */
        vit_tensor sw = w->qkv_w, sb = w->qkv_b;
        int32_t HS = C / NH, h, d, s;
        if ((r = vit__own_as(L, &w->qkv_w, 3 * C, C, sw.dtype)) != VIT_OK ||
            (bias && (r = vit__own(L, &w->qkv_b, 3 * C, 1)) != VIT_OK))
            return r;
        if (!counting)
            for (h = 0; h < NH; h++)
                for (d = 0; d < HS; d++)
                    for (s = 0; s < 3; s++) {
                        int32_t from = h * 3 * HS + d * 3 + s, to = s * C + h * HS + d;
                        vit__row_copy(&w->qkv_w, to, &sw, from);
                        if (bias) vit__row_copy(&w->qkv_b, to, &sb, from);
                    }
        return vit__ld_pack(L, &w->qkv_w, 1);
    }
    return VIT_OK;
}

static vit_result vit__mha_bind(vit__ld *L, vit_model *m, const void *names) {
    char why[64];
    snprintf(why, sizeof why, "embed_dim=%d", (int)m->mha.dim);
    return vit__mha_bind_w(L, &m->mha_w, "", (const vit__mha_naming *)names, m->mha.dim, m->mha.heads, 1, 0, 0, why);
}

static vit_result vit__mha_run(const vit_model *m, vit_arena *a, const vit_tensor *x, const vit_forward_opts *o,
                               vit_tensor *out) {
    return vit_mha_forward(a, &m->mha, &m->mha_w, x, out, o ? o->attn : NULL);
}

static void vit__mha_describe(const vit_model *m, vit__buf *b) {
    vit__bprintf(b, "  self-attention, %d heads of %d, %s\n  input (B, N, %d)\n", (int)m->mha.heads,
                 (int)(m->mha.dim / m->mha.heads),
                 m->mha.scale_after_softmax ? "softmax(Q K^T) / sqrt(C)" : "softmax(Q K^T / sqrt(head size))",
                 (int)m->mha.dim);
}

static vit_result vit__mha_input(const vit_model *m, int32_t B, int32_t n, int32_t w, int32_t *ndim, int32_t *shape) {
    (void)w;
    return vit__shape(ndim, shape, 3, B, n, m->mha.dim, 1);
}

/* ---- modules: MLP ---- */
/* Linear -> ReLU or exact GELU -> Linear: torchvision's MLPBlock (0/3),
   timm's Mlp (fc1/fc2), transformers' ViTIntermediate + ViTOutput, an
   nn.Sequential named `layers` (layers.0/2), the einops ViT's
   FeedForwardBlock (0/3), and a classifier of flat images whose
   nn.Sequential is named `mlp` (mlp.0/2). Input (..., in_dim), output
   (..., out_dim). */

/* y = fc2(act(fc1(x))) + res (res: NULL, or the block's residual), the
   activation and the residual fused into the two products. */
/* y = fc2(act(fc1(x))), or with glu fc2(act(first half) * second half),
   then e (NULL, or the block's layer scale and residual) in fc2's
   epilogue; a plain MLP's activation rides in fc1's. */
/* 1 when fc1 writes fc2's x already converted, bf16 straight from its tiles (vit__mm.yb): both BF16 on the
   dot-product tiles, fc1 as vit__mm_yb says, nothing between them (no GLU, no sub-LN). fc2 then reads what it
   would have converted, the same bits, and the hidden features never go to memory as floats: at ViT-B/16's
   batch 8 fc1 wrote 19 MB a block that fc2 read back to round (1.4% of a BF16 forward). */
static int vit__mlp_yb(const vit_mlp_params *p, const vit_mlp_weights *w, int32_t rows) {
#if VIT__DOT_BF16
    vit__mm fc1;
    if (p->glu || w->norm_w.data || w->fc2_w.dtype != VIT_DTYPE_BF16) return 0;
    fc1 = vit__mm_w(NULL, NULL, &w->fc1_w, NULL, rows, p->in_dim, p->hidden_dim, NULL);
    return vit__mm_yb(&fc1);
#else
    (void)p; (void)w; (void)rows;
    return 0;
#endif
}

/* An I8 MLP over many rows runs in chunks of rows, fc1 then fc2 on each, so that fc1's hidden features (floats: fc2
   quantises each row on its own range; a thread's chunks reuse the same rows of h) are still in the caches when fc2
   converts them, not 19 MB a block at ViT-B/16's batch 8 written past them and read back from memory. Chunks of about
   VIT__MLP_CHUNK_BYTES of hidden features, their count a multiple of the threads, each on one thread with its own
   scratch (no barrier between its fc1 and fc2, its rows in that core's cache). Each output is the same bits whatever
   the chunks: a row's products and its quantisation are the row's alone. ViT-B/16 I8 at batch 8, ten alternating
   pairs: 0.990x on one thread (perf: fc2's conversion of x 3.9% -> 2.5% of the forward), 0.992x on two, and with
   another process spinning on one core two threads over one 0.98 -> 0.91 (threads claim chunks one at a time, none
   waiting for the other between fc1 and fc2); chunks of 1.25 or 4 MiB no better. Not BF16 (fc1 writes fc2's x as bf16,
   half the bytes: 0.596 -> 0.610 s in chunks, one run) nor F32 (1.218 -> 1.221 s). At least 12 rows a chunk. */
#ifndef VIT__MLP_CHUNK_BYTES
#define VIT__MLP_CHUNK_BYTES (2.5 * 1048576.0)
#endif
#ifdef VIT_NO_SIMD
#define VIT__MLP_ALIGN 1
#else
#define VIT__MLP_ALIGN VIT__MR /* chunks of whole tiles */
#endif
static int vit__mlp_chunks(const vit_mlp_params *p, const vit_mlp_weights *w, int32_t rows, int threads) {
    double h = (double)rows * p->hidden_dim * sizeof(float);
    int n;
    if (w->fc1_w.dtype != VIT_DTYPE_I8 || w->fc2_w.dtype != VIT_DTYPE_I8 || p->glu || w->norm_w.data ||
        h < 2.0 * VIT__MLP_CHUNK_BYTES)
        return 0;
    n = (int)((h + VIT__MLP_CHUNK_BYTES - 1.0) / VIT__MLP_CHUNK_BYTES);
    n = (n + threads - 1) / threads * threads;
    return rows / n >= 12 ? n : 0;
}

typedef struct vit__mlp_rows {
    vit__mm fc1, fc2;         /* over all the rows; a chunk runs them on its own */
    vit__mm_rows chunks;      /* fc1's rows in chunks (vit__row_bound), bounds at multiples of VIT__MLP_ALIGN */
    unsigned char *xs;        /* a thread's scratch for the products' x at xs + thread * xsb */
    size_t xsb;
    int cr;                   /* rows of h a thread's chunks reuse (fc1's y, fc2's x: thread * cr on) */
} vit__mlp_rows;

static void vit__mlp_chunk(const void *ctx, int c0, int c1, int thread) {
    const vit__mlp_rows *c = (const vit__mlp_rows *)ctx;
    int ci;
    for (ci = c0; ci < c1; ci++) {
        int m0 = vit__row_bound(&c->chunks, ci), m1 = vit__row_bound(&c->chunks, ci + 1);
        vit__mm f1 = c->fc1, f2 = c->fc2;
        vit__epi e2;
        f1.x += (size_t)m0 * f1.ldx;
        f1.y += (size_t)thread * c->cr * f1.ldy; /* this thread's rows of h */
        f2.x = f1.y;
        f2.y += (size_t)m0 * f2.ldy;
        f1.M = f2.M = m1 - m0;
        f1.xs = f2.xs = c->xs + (size_t)thread * c->xsb;
        if (f2.e && f2.e->r) {
            e2 = *f2.e;
            e2.r += (size_t)m0 * e2.ldr;
            f2.e = &e2;
        }
        vit__matmul(&f1);
        vit__matmul(&f2);
    }
}

static vit_result vit__mlp_core(vit_arena *a, const vit_mlp_params *p, const vit_mlp_weights *w, const float *x,
                               int32_t ldx, const vit__ln *ln, float *y, const vit__epi *e, int32_t rows) {
    size_t mark = vit_arena_mark(a);
    /* fc2's x (the hidden features: h, or with glu g) rows ldh apart (vit__ld_x); with glu, fc1's output h stays
       contiguous for vit_k_glu; fused (vit__mlp_yb), no h: fc1's outputs go to xs2 as fc2's x converted */
    int32_t H = p->hidden_dim, H1 = p->glu ? 2 * H : H, ldh = vit__ld_x(H), ld1 = p->glu ? H1 : ldh, m;
    int fused = vit__mlp_yb(p, w, rows), threads = vit__threads(), chunks = vit__mlp_chunks(p, w, rows, threads);
    int cr = chunks ? (rows + chunks - 1) / chunks + VIT__MLP_ALIGN : rows; /* rows of a chunk at most */
    size_t xsb = vit__dense_scratch(vit__dense_scratch(0, &w->fc1_w, cr, p->in_dim), &w->fc2_w, cr, H);
    vit_tensor h, g;
    vit_result r;
    void *xs, *xs2 = NULL;
    if ((r = vit__fits((double)rows * (ld1 + (p->glu ? ldh : 0)), 0, "mlp")) != VIT_OK) return r;
    if (chunks) /* a slot of scratch and hidden features a thread (fewer where the arena was sized for fewer) */
        threads = vit__arena_slots(a, xsb + (size_t)cr * ld1 * sizeof(float) + 64, threads);
    /* chunks: each thread's chunks reuse its own cr rows of h, the hidden features a chunk at a time, not all rows'
       at once (ViT-B/16 I8 at B = 8: 19 MB of them a block). Activations 37.7 -> 31.6 MB there (peak RSS 125 -> 119
       MB), DINOv2-S/14 I8 at 518 px 16.7 -> 14.2 MB; alternating pairs, B = 8 one thread 1.000x, two 0.989x, 518 px
       0.990x. */
    if (!fused && (r = vit__tensor4(a, &h, 2, chunks ? cr * threads : rows, ld1, 1, 1)) != VIT_OK) return r;
    if (p->glu && (r = vit__tensor4(a, &g, 2, rows, ldh, 1, 1)) != VIT_OK) return r;
    if (fused && (r = vit__scratch(a, vit__mm_scratch(VIT_DTYPE_BF16, rows, H), &xs2)) != VIT_OK) return r;
    if ((r = vit__scratch(a,
                          chunks  ? (size_t)threads * xsb
                          : fused ? vit__dense_scratch(0, &w->fc1_w, rows, p->in_dim)
                                  : xsb,
                          &xs)) != VIT_OK)
        return r;
    if (!vit_arena_counting(a)) {
        vit__epi e1;
        float *hid = fused ? NULL : p->glu ? g.data : h.data;
        vit__mm fc1 = vit__mm_w(fused ? NULL : h.data, x, &w->fc1_w, w->fc1_b.data, rows, p->in_dim, H1, xs);
        vit__mm fc2 = vit__mm_w(y, hid, &w->fc2_w, w->fc2_b.data, rows, H, p->out_dim, fused ? xs2 : xs);
        e1.act = (int)p->act; e1.g = NULL; e1.r = NULL; e1.ldr = 0;
        fc1.e = p->glu ? NULL : &e1;
        fc1.ln = ln;
        fc1.ldx = ldx;
        fc1.ldy = ld1;
        fc2.ldx = ldh;
        fc2.e = e;
        if (fused) {
            fc1.yb = (uint16_t *)xs2;
            fc1.ldyb = (int)(vit__mm_scratch(VIT_DTYPE_BF16, 1, H) / 2);
            fc2.xs_ld = fc1.ldyb / 2;
        }
        if (chunks) {
            vit__mlp_rows c;
            c.fc1 = fc1;
            c.fc2 = fc2;
            c.fc1.threaded = c.fc2.threaded = 0; /* one thread a chunk */
            c.chunks = vit__mm_rows_of(&c.fc1, chunks, VIT__MLP_ALIGN);
            c.xs = (unsigned char *)xs;
            c.xsb = xsb;
            c.cr = cr;
            vit__parallel(chunks, threads, vit__mlp_chunk, &c);
            vit_arena_rewind(a, mark);
            return VIT_OK;
        }
        vit__matmul(&fc1);
        for (m = 0; p->glu && m < rows; m++) /* a row at a time, as vit_k_glu runs them, into g's padded rows */
            vit_k_glu(g.data + (size_t)m * ldh, h.data + (size_t)m * H1, 1, H, p->act);
        if (w->norm_w.data) /* EVA-02's sub-LN: the hidden features normalised before fc2 */
            vit__layernorm_ld(hid, ldh, hid, ldh, w->norm_w.data, w->norm_b.data, rows, H, p->norm_eps);
        vit__matmul(&fc2);
    }
    vit_arena_rewind(a, mark);
    return VIT_OK;
}

VITDEF vit_result vit_mlp_forward(vit_arena *a, const vit_mlp_params *p, const vit_mlp_weights *w, const vit_tensor *x,
                                  vit_tensor *out, vit_tensor *attn) {
    vit_tensor y;
    vit_result r;
    char s[64];
    size_t rows;
    if (!a || !p || !w || !x || !out || !x->data) return vit__fail(VIT_ERR_ARG, "mlp: NULL argument");
    if (p->in_dim < 1 || p->hidden_dim < 1 || p->out_dim < 1)
        return vit__fail(VIT_ERR_ARG, "mlp: params or weights not set");
    if ((r = vit__ws_ok("mlp", 2, "fc1_w", &w->fc1_w, "fc2_w", &w->fc2_w)) != VIT_OK) return r;
    if (x->shape[x->ndim - 1] != p->in_dim)
        return vit__fail(VIT_ERR_SHAPE, "mlp: input has shape %s, expected last dimension %d",
                         vit_tensor_shape_str(x, s, sizeof s), (int)p->in_dim);
    rows = vit_tensor_numel(x) / (size_t)p->in_dim;
    if ((r = vit__fits((double)rows * (2.0 * p->hidden_dim > p->out_dim ? 2.0 * p->hidden_dim : p->out_dim), 0,
                       "mlp")) != VIT_OK)
        return r;
    y = *x;
    y.shape[y.ndim - 1] = p->out_dim;
    if ((r = vit_tensor_init(a, &y, y.ndim, y.shape)) != VIT_OK) return r;
    if ((r = vit__mlp_core(a, p, w, x->data, p->in_dim, NULL, y.data, NULL, (int32_t)rows)) != VIT_OK) return r;
    (void)attn;
    *out = y;
    return VIT_OK;
}

/* The loader's hooks. flat: the model takes (B, in_dim), whole images;
   fc1_x: a gated MLP's value layer apart from its gate fc1 (stacked at
   load, gate first), else NULL; norm: the LayerNorm before fc2, or NULL. */
typedef struct vit__mlp_naming { const char *naming, *fc1, *fc2; int flat; const char *fc1_x, *norm; } vit__mlp_naming;

static const vit__mlp_naming vit__mlp_names[] = {
    {"torchvision", "0", "3", 0, NULL, NULL},
    {"timm", "fc1", "fc2", 0, NULL, NULL},
    {"transformers", "intermediate.dense", "output.dense", 0, NULL, NULL},
    {"seq_layers", "layers.0", "layers.2", 0, NULL, NULL},
    {"einops", "0", "3", 0, NULL, NULL},
    {"seq_mlp", "mlp.0", "mlp.2", 1, NULL, NULL},
    {"hf_swiglu", "weights_in", "weights_out", 0, NULL, NULL},
    /* timm's SwiGLU (EVA-02 B/L): gate and value apart, a LayerNorm before fc2 where the file has one */
    {"timm_swiglu", "fc1_g", "fc2", 0, "fc1_x", "norm"},
    /* timm's Mlp with a norm_layer (Beit's and Eva's scale_mlp): a LayerNorm before fc2 where the file has one */
    {"timm_norm", "fc1", "fc2", 0, NULL, "norm"}};

static const vit__key vit__mlp_keys[] = {
    VIT__INT("in_dim", 1, 1 << 20, mlp.in_dim),   VIT__INT("hidden_dim", 1, 1 << 20, mlp.hidden_dim),
    VIT__INT("out_dim", 1, 1 << 20, mlp.out_dim), VIT__ENUM("act", VIT__ACT_WORDS, mlp.act),
    VIT__INT_OPT("glu", 0, 1, 0, mlp.glu),        VIT__KEYS_END};

static vit_result vit__mlp_check(vit_model *m, vit__ld *L) { (void)m; (void)L; return VIT_OK; }

/* glu: fc1 gives 2 * hidden rows (the gate's, then the values'), one
   layer or two (nm->fc1_x: stacked here); norm: the LayerNorm before fc2. */
static vit_result vit__mlp_bind_w(vit__ld *L, vit_mlp_weights *w, const char *prefix, const vit__mlp_naming *nm,
                                  int32_t in, int32_t hidden, int32_t out, int glu, int norm, const char *why) {
    vit_result r;
    memset(w, 0, sizeof *w);
    if ((norm && !nm->norm) || (nm->fc1_x && !glu))
        return vit__fail(VIT_ERR_FORMAT, "%s: naming %s has no %s", vit__ld_src(L), nm->naming,
                         norm && !nm->norm ? "LayerNorm inside the MLP" : "ungated MLP");
    if (glu && nm->fc1_x) {
        vit_tensor gw, gb, xw, xb;
        int32_t i;
        if ((r = vit__bind_linear(L, &gw, &gb, prefix, nm->fc1, hidden, in, why)) != VIT_OK ||
            (r = vit__bind_linear(L, &xw, &xb, prefix, nm->fc1_x, hidden, in, why)) != VIT_OK)
            return r;
        w->fc1_w.name = gw.name;
        w->fc1_b.name = gb.name;
        /* kept BF16 or I8 when both are, else F32 */
        if ((r = vit__own_as(L, &w->fc1_w, 2 * hidden, in, gw.dtype == xw.dtype ? gw.dtype : VIT_DTYPE_F32)) !=
                VIT_OK ||
            (r = vit__own(L, &w->fc1_b, 2 * hidden, 1)) != VIT_OK)
            return r;
        if (!vit__ld_counting(L))
            for (i = 0; i < 2 * hidden; i++) {
                vit__row_copy(&w->fc1_w, i, i < hidden ? &gw : &xw, i % hidden);
                vit__row_copy(&w->fc1_b, i, i < hidden ? &gb : &xb, i % hidden);
            }
        if ((r = vit__ld_pack(L, &w->fc1_w, 1)) != VIT_OK) return r;
    } else if ((r = vit__bind_linear(L, &w->fc1_w, &w->fc1_b, prefix, nm->fc1, glu ? 2 * hidden : hidden, in, why)) !=
               VIT_OK)
        return r;
    if (norm && (r = vit__bind_ln(L, &w->norm_w, &w->norm_b, prefix, nm->norm, hidden, why)) != VIT_OK) return r;
    return vit__bind_linear(L, &w->fc2_w, &w->fc2_b, prefix, nm->fc2, out, hidden, why);
}

static vit_result vit__mlp_bind(vit__ld *L, vit_model *m, const void *names) {
    const vit_mlp_params *p = &m->mlp;
    char why[96];
    snprintf(why, sizeof why, "in_dim=%d, hidden_dim=%d, out_dim=%d", (int)p->in_dim, (int)p->hidden_dim,
             (int)p->out_dim);
    return vit__mlp_bind_w(L, &m->mlp_w, "", (const vit__mlp_naming *)names, p->in_dim, p->hidden_dim, p->out_dim,
                           p->glu, 0, why);
}

static vit_result vit__mlp_run(const vit_model *m, vit_arena *a, const vit_tensor *x, const vit_forward_opts *o,
                               vit_tensor *out) {
    (void)o;
    return vit_mlp_forward(a, &m->mlp, &m->mlp_w, x, out, NULL);
}

static void vit__mlp_describe(const vit_model *m, vit__buf *b) {
    const vit_mlp_params *p = &m->mlp;
    vit__bprintf(b, "  %d -> %d (%s%s) -> %d\n", (int)p->in_dim, (int)p->hidden_dim, vit__act_name(p->act),
                 p->glu ? ", gated" : "", (int)p->out_dim);
    if (((const vit__mlp_naming *)vit__naming_of(m))->flat) vit__bprintf(b, "  input (B, %d)\n", (int)p->in_dim);
    else vit__bprintf(b, "  input (..., %d)\n", (int)p->in_dim);
}

static vit_result vit__mlp_input(const vit_model *m, int32_t B, int32_t n, int32_t w, int32_t *ndim, int32_t *shape) {
    (void)w;
    if (((const vit__mlp_naming *)vit__naming_of(m))->flat) return vit__shape(ndim, shape, 2, B, m->mlp.in_dim, 1, 1);
    return vit__shape(ndim, shape, 3, B, n, m->mlp.in_dim, 1);
}

/* ---- modules: encoder block ---- */
/* Pre-LN Transformer encoder block ("An Image is Worth 16x16 Words",
   Dosovitskiy et al. 2021): x + MHA(LN1(x)), then + MLP(LN2(.)).
   torchvision's EncoderBlock (eps 1e-6, GELU), an EncoderBlock of
   nn.MultiheadAttention and a ReLU MLP (eps 1e-5), the einops ViT's
   TransformerEncoderBlock (eps 1e-5, GELU, scale after the softmax),
   timm's Block, transformers' ViTLayer. Layout (B, N, C). */

static vit_result vit__block_core(vit_arena *a, const vit_block_params *p, const vit_block_weights *w,
                                 const float *x, float *y, float *att, int32_t B, int32_t N) {
    int32_t C = p->dim, rows = B * N, ldh = vit__ld_x(C); /* h: LN's output, x of qkv and fc1 in F32 */
    size_t mark = vit_arena_mark(a);
    vit_mha_params mp;
    vit_mlp_params lp;
    vit__epi e1, e2;
    vit__ln ln1, ln2;
    vit_tensor h, t;
    vit_result r;
    int f1, f2;
    memset(&mp, 0, sizeof mp);
    mp.dim = C;
    mp.heads = p->heads;
    mp.scale_after_softmax = p->scale_after_softmax;
    mp.qk_norm = p->qk_norm;
    mp.qk_eps = p->ln_eps;
    lp.in_dim = C; lp.hidden_dim = p->mlp_dim; lp.out_dim = C; lp.act = p->act; lp.glu = p->glu;
    lp.norm_eps = p->ln_eps;
    f1 = vit__ln_fuses(&w->attn.qkv_w, C);
    f2 = vit__ln_fuses(&w->mlp.fc1_w, C);
    h.data = NULL; /* f1 and f2: no LN(x) written out */
    if ((!f1 || !f2) && (r = vit__tensor4(a, &h, 2, rows, ldh, 1, 1)) != VIT_OK) return r;
    if ((r = vit__tensor4(a, &t, 2, rows, C, 1, 1)) != VIT_OK) return r;

    /* t = x + ls1 * attn(LN1(x)), then y = t + ls2 * mlp(LN2(t)): the
       gammas and the residuals ride in the products' epilogues, y may be x */
    e1.act = VIT__EPI_NONE; e1.g = p->layer_scale ? w->ls1.data : NULL; e1.r = x; e1.ldr = C;
    e2.act = VIT__EPI_NONE; e2.g = p->layer_scale ? w->ls2.data : NULL; e2.r = t.data; e2.ldr = C;
    /* the LayerNorms in the products that convert or pack x (vit__ln_fuses), else written to h */
    ln1.w = w->ln1_w.data; ln1.b = w->ln1_b.data; ln1.eps = p->ln_eps;
    ln2.w = w->ln2_w.data; ln2.b = w->ln2_b.data; ln2.eps = p->ln_eps;
    if (!f1 && !vit_arena_counting(a)) vit__layernorm_ld(h.data, ldh, x, C, ln1.w, ln1.b, rows, C, ln1.eps);
    if ((r = vit__mha_core(a, &mp, &w->attn, f1 ? x : h.data, f1 ? C : ldh, f1 ? &ln1 : NULL, t.data, &e1, att, B,
                           N)) != VIT_OK)
        return r;
    if (!f2 && !vit_arena_counting(a)) vit__layernorm_ld(h.data, ldh, t.data, C, ln2.w, ln2.b, rows, C, ln2.eps);
    if ((r = vit__mlp_core(a, &lp, &w->mlp, f2 ? t.data : h.data, f2 ? C : ldh, f2 ? &ln2 : NULL, y, &e2, rows)) !=
        VIT_OK)
        return r;
    vit_arena_rewind(a, mark);
    return VIT_OK;
}

static vit_result vit__block_ready(const vit_block_params *p, const vit_block_weights *w) {
    vit_mha_params mp;
    vit_result r;
    memset(&mp, 0, sizeof mp);
    mp.dim = p->dim; mp.heads = p->heads;
    mp.qk_norm = p->qk_norm;
    if (p->mlp_dim < 1 || !w->ln1_w.data || !w->ln1_b.data || !w->ln2_w.data || !w->ln2_b.data ||
        (p->layer_scale && (!w->ls1.data || !w->ls2.data)) || (p->mlp_norm && !w->mlp.norm_w.data) ||
        (p->attn_norm && !w->attn.norm_w.data))
        return vit__fail(VIT_ERR_ARG, "block: params or weights not set");
    if ((r = vit__ws_ok("block", 2, "mlp.fc1_w", &w->mlp.fc1_w, "mlp.fc2_w", &w->mlp.fc2_w)) != VIT_OK) return r;
    return vit__mha_ready(&mp, &w->attn);
}

VITDEF vit_result vit_block_forward(vit_arena *a, const vit_block_params *p, const vit_block_weights *w,
                                    const vit_tensor *x, vit_tensor *out, vit_tensor *attn) {
    vit_tensor y, att;
    vit_result r;
    if (!a || !p || !w || !out) return vit__fail(VIT_ERR_ARG, "block: NULL argument");
    if ((r = vit__block_ready(p, w)) != VIT_OK || (r = vit__need3(x, "block", p->dim)) != VIT_OK) return r;
    if ((r = vit__fits((double)x->shape[0] * x->shape[1] * (p->mlp_dim > 3 * p->dim ? p->mlp_dim : 3 * p->dim),
                       x->shape[0], "block")) != VIT_OK)
        return r;
    if ((r = vit__tensor4(a, &y, 3, x->shape[0], x->shape[1], p->dim, 1)) != VIT_OK) return r;
    if (attn && (r = vit__tensor4(a, &att, 4, x->shape[0], p->heads, x->shape[1], x->shape[1])) != VIT_OK) return r;
    if ((r = vit__block_core(a, p, w, x->data, y.data, attn ? att.data : NULL, x->shape[0], x->shape[1])) != VIT_OK)
        return r;
    if (attn) *attn = att;
    *out = y;
    return VIT_OK;
}

/* The loader's hooks. A block's names: its LayerNorms, and the prefixes
   of its attention and MLP, whose naming rows say the rest. */
typedef struct vit__block_naming {
    const char *naming;
    const char *ln1, *attn, *ln2, *mlp;  /* under the block's prefix */
    const vit__mha_naming *mha_names;    /* the attention's */
    const vit__mlp_naming *mlp_names;    /* the MLP's */
    const vit__mlp_naming *glu_names;    /* a gated MLP's (SwiGLU); with fc1_x, used where the file has it, else
                                            the gate and value packed in mlp_names' fc1 */
    const char *ls1, *ls2;               /* layer scale's gammas, or NULL */
    const vit__mha_naming *mha_sep;      /* the attention as separate layers where the file has no fused qkv of
                                            mha_names, or NULL */
} vit__block_naming;

static const vit__block_naming vit__block_names[] = {
    {"torchvision", "ln_1", "self_attention.", "ln_2", "mlp.", &vit__mha_names[0], &vit__mlp_names[0],
     &vit__mlp_names[0], NULL, NULL, NULL},
    {"patchify", "ln_1", "attention.", "ln_2", "mlp.", &vit__mha_names[0], &vit__mlp_names[3], &vit__mlp_names[3], NULL,
     NULL, NULL},
    {"einops", "0.fn.0", "0.fn.1.", "1.fn.0", "1.fn.1.", &vit__mha_names[1], &vit__mlp_names[4], &vit__mlp_names[4],
     NULL, NULL, NULL},
    {"timm", "norm1", "attn.", "norm2", "mlp.", &vit__mha_names[3], &vit__mlp_names[1], &vit__mlp_names[1], "ls1.gamma",
     "ls2.gamma", NULL},
    {"transformers", "layernorm_before", "attention.", "layernorm_after", "", &vit__mha_names[4], &vit__mlp_names[2],
     &vit__mlp_names[2], NULL, NULL, NULL},
    {"hf_dinov2", "norm1", "attention.", "norm2", "mlp.", &vit__mha_names[4], &vit__mlp_names[1], &vit__mlp_names[6],
     "layer_scale1.lambda1", "layer_scale2.lambda1", NULL},
    {"hf_clip", "layer_norm1", "self_attn.", "layer_norm2", "mlp.", &vit__mha_names[5], &vit__mlp_names[1],
     &vit__mlp_names[1], NULL, NULL, NULL},
    /* timm's Beit and Eva (EVA-02): the attention fused or separate (Eva), the MLP timm's Mlp or SwiGLU, packed
       or apart, with or without a LayerNorm inside (scale_mlp) */
    {"beit", "norm1", "attn.", "norm2", "mlp.", &vit__mha_names[6], &vit__mlp_names[8], &vit__mlp_names[7], "gamma_1",
     "gamma_2", NULL},
    {"eva", "norm1", "attn.", "norm2", "mlp.", &vit__mha_names[6], &vit__mlp_names[8], &vit__mlp_names[7], "gamma_1",
     "gamma_2", &vit__mha_names[7]},
    /* transformers' BeitLayer: ViTLayer's names, layer scale as lambda_1 and lambda_2 */
    {"hf_beit", "layernorm_before", "attention.", "layernorm_after", "", &vit__mha_names[8], &vit__mlp_names[2],
     &vit__mlp_names[2], "lambda_1", "lambda_2", NULL}};

static const vit__key vit__block_keys[] = {
    VIT__INT("hidden_dim", 1, 65536, block.dim),
    VIT__INT("num_heads", 1, 65536, block.heads),
    VIT__INT("mlp_dim", 1, 1 << 20, block.mlp_dim),
    {"ln_eps", 'p', 0.0, 1.0, offsetof(vit_model, block.ln_eps), NULL, NULL, 0, 0},
    VIT__ENUM("act", VIT__ACT_WORDS, block.act),
    {"scale_after_softmax", 'i', 0, 1, offsetof(vit_model, block.scale_after_softmax), NULL, "attn_quirk", 0, 0},
    VIT__INT_OPT("layer_scale", 0, 1, 0, block.layer_scale),
    VIT__INT_OPT("qk_norm", 0, 1, 0, block.qk_norm),
    VIT__INT_OPT("glu", 0, 1, 0, block.glu),
    VIT__KEYS_END};

static vit_result vit__block_check(vit_model *m, vit__ld *L) {
    const char *src = vit__ld_src(L);
    if (m->block.dim % m->block.heads)
        return vit__fail(VIT_ERR_FORMAT, "%s: hidden_dim %d is not a multiple of num_heads %d", src, (int)m->block.dim,
                         (int)m->block.heads);
    return VIT_OK;
}

/* The block's attention naming: its fused one, or its separate one where
   the file has no fused qkv (EVA-02 Ti/S against B/L). */
static const vit__mha_naming *vit__block_mha(const vit__ld *L, const char *prefix, const vit__block_naming *nm) {
    char n[300];
    /* Eva's attn_type 'rope' (timm's AttentionRope: PE, the RoPE ViTs) keeps the fused qkv's own bias, as timm's
       Attention names it, where EvaAttention has q_bias and v_bias */
    snprintf(n, sizeof n, "%s%sqkv.bias", prefix, nm->attn);
    if (!strcmp(nm->naming, "eva") && vit__has(L, n)) return &vit__mha_names[3];
    if (!nm->mha_sep || !nm->mha_names->w) return nm->mha_names;
    snprintf(n, sizeof n, "%s%s%s", prefix, nm->attn, nm->mha_names->w);
    return vit__has(L, n) ? nm->mha_names : nm->mha_sep;
}

/* The block's MLP naming: a gated MLP's gate and value apart where the
   file has them (glu_names' fc1_x), else packed in one fc1. */
static const vit__mlp_naming *vit__block_mlp(const vit__ld *L, const char *prefix, const vit__block_naming *nm,
                                             int glu) {
    char n[300];
    if (!glu) return nm->mlp_names;
    if (!nm->glu_names->fc1_x) return nm->glu_names;
    snprintf(n, sizeof n, "%s%s%s.weight", prefix, nm->mlp, nm->glu_names->fc1_x);
    return vit__has(L, n) ? nm->glu_names : nm->mlp_names;
}

/* Binds one block's weights under prefix into w; qkv_bias 0: q, k and v
   have no biases. */
static vit_result vit__block_bind_w(vit__ld *L, vit_block_weights *w, const char *prefix, const vit__block_naming *nm,
                                    const vit_block_params *p, int qkv_bias, const char *why) {
    char pre[256], n[256];
    vit_result r;
    memset(w, 0, sizeof *w);
    if ((p->layer_scale && !nm->ls1) || (p->qk_norm && !nm->mha_names->q_norm))
        return vit__fail(VIT_ERR_UNSUPPORTED, "%s: naming %s has no %s", vit__ld_src(L), nm->naming,
                         p->qk_norm ? "qk-norm" : "layer scale");
    if ((r = vit__bind_ln(L, &w->ln1_w, &w->ln1_b, prefix, nm->ln1, p->dim, why)) != VIT_OK) return r;
    snprintf(pre, sizeof pre, "%s%s", prefix, nm->attn);
    if ((r = vit__mha_bind_w(L, &w->attn, pre, vit__block_mha(L, prefix, nm), p->dim, p->heads, qkv_bias, p->qk_norm,
                             p->attn_norm, why)) != VIT_OK)
        return r;
    if ((r = vit__bind_ln(L, &w->ln2_w, &w->ln2_b, prefix, nm->ln2, p->dim, why)) != VIT_OK) return r;
    snprintf(pre, sizeof pre, "%s%s", prefix, nm->mlp);
    if ((r = vit__mlp_bind_w(L, &w->mlp, pre, vit__block_mlp(L, prefix, nm, p->glu), p->dim, p->mlp_dim, p->dim, p->glu,
                             p->mlp_norm, why)) != VIT_OK)
        return r;
    if (p->layer_scale) {
        snprintf(n, sizeof n, "%s%s", prefix, nm->ls1);
        if ((r = vit__bind(L, &w->ls1, n, 1, p->dim, 0, 0, 0, why)) != VIT_OK) return r;
        snprintf(n, sizeof n, "%s%s", prefix, nm->ls2);
        if ((r = vit__bind(L, &w->ls2, n, 1, p->dim, 0, 0, 0, why)) != VIT_OK) return r;
    }
    return VIT_OK;
}

static vit_result vit__block_bind(vit__ld *L, vit_model *m, const void *names) {
    vit_block_weights tmp;
    vit_result r;
    char why[96];
    if (!(m->blocks = (vit_block_weights *)vit_arena_alloc(&m->arena, sizeof(vit_block_weights)))) return VIT_ERR_OOM;
    snprintf(why, sizeof why, "hidden_dim=%d, num_heads=%d, mlp_dim=%d", (int)m->block.dim, (int)m->block.heads,
             (int)m->block.mlp_dim);
    /* The block table is fake memory while counting: bind into a copy. */
    if ((r = vit__block_bind_w(L, &tmp, "", (const vit__block_naming *)names, &m->block, 1, why)) != VIT_OK) return r;
    if (!vit__ld_counting(L)) m->blocks[0] = tmp;
    return VIT_OK;
}

static vit_result vit__block_run(const vit_model *m, vit_arena *a, const vit_tensor *x, const vit_forward_opts *o,
                                 vit_tensor *out) {
    return vit_block_forward(a, &m->block, &m->blocks[0], x, out, o ? o->attn : NULL);
}

static void vit__block_describe(const vit_model *m, vit__buf *b) {
    const vit_block_params *p = &m->block;
    vit__bprintf(
        b,
        "  x + attention(LayerNorm(x)), %d heads%s%s; then + MLP %d -> %d (%s%s) -> %d of LayerNorm(.)%s\n  input "
        "(B, N, %d)\n",
        (int)p->heads, p->scale_after_softmax ? " scaled after the softmax" : "", p->qk_norm ? ", qk-norm" : "",
        (int)p->dim, (int)p->mlp_dim, vit__act_name(p->act), p->glu ? ", gated" : "", (int)p->dim,
        p->layer_scale ? "; layer scale" : "", (int)p->dim);
}

static vit_result vit__block_input(const vit_model *m, int32_t B, int32_t n, int32_t w, int32_t *ndim, int32_t *shape) {
    (void)w;
    return vit__shape(ndim, shape, 3, B, n, m->block.dim, 1);
}

/* ---- modules: patch embedding ---- */
/* Patchify: a conv with kernel = stride = P, flattened to tokens, then
   optionally the class token first and the position embedding added.
   A PatchifyLayer (conv_proj; no class token), torchvision's conv_proj +
   class_token + encoder.pos_embedding, the einops ViT's PatchEmbedding
   (projection.0, cls_token, positions).
   (B, Cin, H, W) -> (B, (H/P)*(W/P) + class_token, C). */

VITDEF vit_result vit_patch_forward(vit_arena *a, const vit_patch_params *p, const vit_patch_weights *w,
                                    const vit_tensor *x, vit_tensor *out, vit_tensor *attn) {
    vit_tensor y, cols;
    vit_result r;
    char s[64];
    int32_t B, H, W, P, C, N, T, K, bi, pre;
    int lowc; /* a BF16 or I8 file's conv: the (C, K) matrix of a dense weight (vit_patch_weights) */
    size_t mark;
    void *xs = NULL;

    /* the params, the weights they ask for, then the input against them */
    if (!a || !p || !w || !x || !out || !x->data) return vit__fail(VIT_ERR_ARG, "patch: NULL argument");
    P = p->patch_size; C = p->dim;
    pre = (p->class_token ? 1 : 0) + (p->dist_token ? 1 : 0) + p->reg_tokens;
    lowc = w->conv_w.dtype != VIT_DTYPE_F32;
    if (P < 1 || C < 1 || p->in_channels < 1 || p->reg_tokens < 0 || p->pos_prefix < 0 || p->pos_prefix > pre ||
        (!lowc && !w->conv_w.data) || (p->class_token && !w->cls.data) || (p->dist_token && !w->dist.data) ||
        (p->reg_tokens && !w->reg.data) || (p->pos_embed && !w->pos.data))
        return vit__fail(VIT_ERR_ARG, "patch: params or weights not set");
    K = p->in_channels * P * P;
    if (lowc && (r = vit__w_ok("patch", "conv_w", &w->conv_w)) != VIT_OK) return r;
    if (lowc && (w->conv_w.ndim != 2 || w->conv_w.shape[0] != C || w->conv_w.shape[1] != K))
        return vit__fail(VIT_ERR_ARG, "patch: a BF16 or I8 conv_w must be the (%d, %d) matrix of the conv's kernel",
                         (int)C, (int)K);
    if (x->ndim != 4 || x->shape[1] != p->in_channels)
        return vit__fail(VIT_ERR_SHAPE, "patch: input has shape %s, expected (B, %d, H, W)",
                         vit_tensor_shape_str(x, s, sizeof s), (int)p->in_channels);
    B = x->shape[0]; H = x->shape[2]; W = x->shape[3];
    if ((p->pos_embed || p->image_size > 0) && (H != p->image_size || W != p->image_size))
        return vit__fail(VIT_ERR_SHAPE, "patch: input is %dx%d, the model expects %dx%d images", (int)H, (int)W,
                         (int)p->image_size, (int)p->image_size);
    if (H % P || W % P)
        return vit__fail(VIT_ERR_SHAPE, "patch: input %dx%d is not a multiple of the patch size %d", (int)H, (int)W,
                         (int)P);

    /* sizes; y stays, the im2col columns are scratch */
    N = (H / P) * (W / P);
    T = N + pre;
    if ((r = vit__fits((double)B * T * (C > K ? C : K), B, "patch")) != VIT_OK) return r;
    if ((r = vit__tensor4(a, &y, 3, B, T, C, 1)) != VIT_OK) return r;
    mark = vit_arena_mark(a);
    if ((r = vit__tensor4(a, &cols, 3, B, N, K, 1)) != VIT_OK) return r;
    if (lowc && (r = vit__scratch(a, vit__dense_scratch(0, &w->conv_w, B * N, K), &xs)) != VIT_OK) return r;

    /* every image's patch tokens in one product, into y's last B N rows, each image's then moved up to its rows
       after its prefix (to lower rows, images in order: a move reads no rows a move before wrote); then the prefix
       tokens and the position embedding. One image at a time, the products of 196 rows scaled 1.43x on two
       threads (ViT-B/16 I8 at B = 8, where the 1,568 rows of the encoder's products scale 1.9x). */
    if (!vit_arena_counting(a)) {
        vit_patch_shape ps;
        ps.B = B; ps.C = p->in_channels; ps.H = H; ps.W = W; ps.P = P; ps.D = C;
        if (lowc) {
            vit__patch_cols(cols.data, x->data, &ps);
            vit__dense(y.data + (size_t)B * pre * C, cols.data, &w->conv_w, w->conv_b.data, B * N, K, C, xs);
        } else {
            vit_k_patch_conv(y.data + (size_t)B * pre * C, cols.data, x->data, w->conv_w.data, w->conv_b.data, &ps);
        }
        for (bi = 0; bi < B; bi++) {
            float *yb = y.data + (size_t)bi * T * C, *at = yb;
            if (pre && bi < B - 1)
                memmove(yb + (size_t)pre * C, y.data + ((size_t)B * pre + (size_t)bi * N) * C,
                        (size_t)N * C * sizeof(float));
            if (p->class_token) { memcpy(at, w->cls.data, (size_t)C * sizeof(float)); at += C; }
            if (p->dist_token) { memcpy(at, w->dist.data, (size_t)C * sizeof(float)); at += C; }
            if (p->reg_tokens) memcpy(at, w->reg.data, (size_t)p->reg_tokens * C * sizeof(float));
            /* the position embedding: its first pos_prefix rows on the
               first prefix tokens, the rest on the patches */
            if (p->pos_embed) {
                vit_k_add(yb, yb, w->pos.data, p->pos_prefix * C);
                vit_k_add(yb + (size_t)pre * C, yb + (size_t)pre * C, w->pos.data + (size_t)p->pos_prefix * C, N * C);
            }
        }
    }

    /* the scratch back to the arena; y stays */
    vit_arena_rewind(a, mark);
    (void)attn;
    *out = y;
    return VIT_OK;
}

/* The loader's hooks. cls, dist, reg, pos: NULL when the naming has none;
   pos3d: the position embedding is stored (1, T, C), else (T, C); cls1d:
   the class token is stored (C) (CLIP's class_embedding), else (1, 1, C). */
typedef struct vit__patch_naming {
    const char *naming, *conv, *cls, *pos;
    int pos3d;
    const char *dist, *reg;
    int cls1d;
} vit__patch_naming;

static const vit__patch_naming vit__patch_names[] = {
    {"conv_proj", "conv_proj", NULL, NULL, 0, NULL, NULL, 0},
    {"einops", "projection.0", "cls_token", "positions", 0, NULL, NULL, 0}};

static const vit__key vit__patch_keys[] = {
    VIT__INT("image_size", 1, 8192, patch.image_size), VIT__INT("patch_size", 1, 8192, patch.patch_size),
    VIT__INT("in_channels", 1, 64, patch.in_channels), VIT__INT("hidden_dim", 1, 65536, patch.dim),
    VIT__INT("class_token", 0, 1, patch.class_token), VIT__INT("pos_embed", 0, 1, patch.pos_embed), VIT__KEYS_END};

static vit_result vit__patch_check(vit_model *m, vit__ld *L) {
    const char *src = vit__ld_src(L);
    vit_patch_params *p = &m->patch;
    p->pos_prefix = p->class_token; /* patch_embed files: the class token's position, if any */
    if (p->image_size % p->patch_size)
        return vit__fail(VIT_ERR_FORMAT, "%s: image_size %d is not a multiple of patch_size %d", src,
                         (int)p->image_size, (int)p->patch_size);
    return VIT_OK;
}

/* Binds the embedding's weights, every name after prefix, into w; bias 0:
   the conv has none. */
static vit_result vit__patch_bind_w(vit__ld *L, vit_patch_weights *w, const char *prefix, const vit__patch_naming *nm,
                                    const vit_patch_params *p, int bias, const char *why) {
    int32_t G = p->image_size / p->patch_size, T = G * G + p->pos_prefix, C = p->dim;
    char n[256];
    vit_result r = VIT_OK;
    memset(w, 0, sizeof *w);
    if ((p->class_token && !nm->cls) || (p->dist_token && !nm->dist) || (p->reg_tokens && !nm->reg) ||
        (p->pos_embed && !nm->pos))
        return vit__fail(VIT_ERR_FORMAT, "%s: naming %s has no %s", vit__ld_src(L), nm->naming,
                         p->class_token && !nm->cls ? "class token" : p->dist_token && !nm->dist ? "distillation token"
                         : p->reg_tokens && !nm->reg ? "register tokens" : "position embedding");

    /* the conv: in a BF16 or I8 file the matrix of a dense layer's weight, kept in its dtype (vit__bind_low; at most
       65536 inputs, as I8 products take), so that the patches' product runs on the dot-product tiles as the
       encoder's do (ViT-B/16 I8, one thread: 2.7 ms of f32 products a forward); else F32, (C, in_channels, P, P) */
    snprintf(n, sizeof n, "%s%s.weight", prefix, nm->conv);
    if ((r = vit__bind_conv(L, &w->conv_w, n, C, p->in_channels, p->patch_size, why)) != VIT_OK) return r;
    snprintf(n, sizeof n, "%s%s.bias", prefix, nm->conv);
    if (bias && (r = vit__bind(L, &w->conv_b, n, 1, C, 0, 0, 0, why)) != VIT_OK) return r;

    /* the prefix tokens */
    snprintf(n, sizeof n, "%s%s", prefix, nm->cls ? nm->cls : "");
    if (p->class_token && (r = nm->cls1d ? vit__bind(L, &w->cls, n, 1, C, 0, 0, 0, why)
                                         : vit__bind(L, &w->cls, n, 3, 1, 1, C, 0, why)) != VIT_OK)
        return r;
    snprintf(n, sizeof n, "%s%s", prefix, nm->dist ? nm->dist : "");
    if (p->dist_token && (r = vit__bind(L, &w->dist, n, 3, 1, 1, C, 0, why)) != VIT_OK) return r;
    snprintf(n, sizeof n, "%s%s", prefix, nm->reg ? nm->reg : "");
    if (p->reg_tokens && (r = vit__bind(L, &w->reg, n, 3, 1, p->reg_tokens, C, 0, why)) != VIT_OK) return r;

    /* the position embedding */
    snprintf(n, sizeof n, "%s%s", prefix, nm->pos ? nm->pos : "");
    if (p->pos_embed) {
        if (nm->pos3d) r = vit__bind(L, &w->pos, n, 3, 1, T, C, 0, why);
        else r = vit__bind(L, &w->pos, n, 2, T, C, 0, 0, why);
    }
    return r;
}

static vit_result vit__patch_bind(vit__ld *L, vit_model *m, const void *names) {
    char why[96];
    snprintf(why, sizeof why, "hidden_dim=%d, patch_size=%d", (int)m->patch.dim, (int)m->patch.patch_size);
    return vit__patch_bind_w(L, &m->patch_w, "", (const vit__patch_naming *)names, &m->patch, 1, why);
}

static vit_result vit__patch_run(const vit_model *m, vit_arena *a, const vit_tensor *x, const vit_forward_opts *o,
                                 vit_tensor *out) {
    (void)o;
    return vit_patch_forward(a, &m->patch, &m->patch_w, x, out, NULL);
}

static void vit__patch_describe(const vit_model *m, vit__buf *b) {
    const vit_patch_params *p = &m->patch;
    vit__bprintf(b, "  %dx%d patches of %d channels -> %d features%s%s\n  input (B, %d, %d, %d)\n", (int)p->patch_size,
                 (int)p->patch_size, (int)p->in_channels, (int)p->dim, p->class_token ? ", class token first" : "",
                 p->pos_embed ? ", position embedding added" : "", (int)p->in_channels, (int)p->image_size,
                 (int)p->image_size);
}

static vit_result vit__patch_input(const vit_model *m, int32_t B, int32_t n, int32_t w, int32_t *ndim, int32_t *shape) {
    (void)n; (void)w;
    return vit__shape(ndim, shape, 4, B, m->patch.in_channels, m->patch.image_size, m->patch.image_size);
}

/* ---- modules: squeeze-excitation ---- */
/* "Squeeze-and-Excitation Networks" (Hu et al. 2018), torchvision's
   SqueezeExcitation (and the tutorials' copies of it): gates = sigmoid(fc2(relu(fc1(avgpool(x))))), y = gates
   * x, the 1x1 convs with bias. Layout (B, C, H, W). Weights fc1.weight (S,
   C, 1, 1), fc1.bias (S), fc2.weight (C, S, 1, 1), fc2.bias (C). */

VITDEF vit_result vit_se_forward(vit_arena *a, const vit_se_params *p, const vit_se_weights *w, const vit_tensor *x,
                                 vit_tensor *out, vit_tensor *attn) {
    vit_tensor y, g, pool, h;
    vit_result r;
    int32_t B, C, S, HW;
    size_t mark;
    if (!a || !p || !w || !out) return vit__fail(VIT_ERR_ARG, "se: NULL argument");
    if (p->channels < 1 || p->squeeze < 1 || !w->fc1_w.data || !w->fc1_b.data || !w->fc2_w.data || !w->fc2_b.data)
        return vit__fail(VIT_ERR_ARG, "se: params or weights not set");
    if ((r = vit__need4(x, "se", p->channels, 0)) != VIT_OK) return r;
    B = x->shape[0]; C = p->channels; S = p->squeeze; HW = x->shape[2] * x->shape[3];
    if ((r = vit__fits((double)B * C * x->shape[2] * x->shape[3], B, "se")) != VIT_OK) return r;
    if ((r = vit_tensor_init(a, &y, 4, x->shape)) != VIT_OK) return r;
    if (attn && (r = vit__tensor4(a, &g, 2, B, C, 1, 1)) != VIT_OK) return r;
    mark = vit_arena_mark(a);
    if (!attn && (r = vit__tensor4(a, &g, 2, B, C, 1, 1)) != VIT_OK) return r;
    if ((r = vit__tensor4(a, &pool, 2, B, C, 1, 1)) != VIT_OK || (r = vit__tensor4(a, &h, 2, B, S, 1, 1)) != VIT_OK)
        return r;
    if (!vit_arena_counting(a)) {
        vit_k_rowstats(pool.data, NULL, x->data, B * C, HW); /* AdaptiveAvgPool2d(1) */
        vit_k_matmul(h.data, pool.data, w->fc1_w.data, w->fc1_b.data, B, C, S);
        vit_k_relu(h.data, h.data, B * S);
        vit_k_matmul(g.data, h.data, w->fc2_w.data, w->fc2_b.data, B, S, C);
        vit_k_sigmoid(g.data, g.data, B * C);
        vit_k_rowaffine(y.data, x->data, g.data, NULL, B * C, HW); /* scale * x */
    }
    vit_arena_rewind(a, mark);
    if (attn) *attn = g;
    *out = y;
    return VIT_OK;
}

/* The loader's hooks. */
typedef struct vit__se_naming { const char *naming, *fc1, *fc2; } vit__se_naming;
static const vit__se_naming vit__se_names[] = {{"torchvision", "fc1", "fc2"}};

static const vit__key vit__se_keys[] = {VIT__INT("in_channels", 1, 1 << 20, se.channels),
                                        VIT__INT("squeeze_channels", 1, 1 << 20, se.squeeze), VIT__KEYS_END};

static vit_result vit__se_check(vit_model *m, vit__ld *L) { (void)m; (void)L; return VIT_OK; }

static vit_result vit__se_bind(vit__ld *L, vit_model *m, const void *names) {
    const vit__se_naming *nm = (const vit__se_naming *)names;
    const vit_se_params *p = &m->se;
    vit_se_weights *w = &m->se_w;
    char why[96], n[256];
    vit_result r;
    snprintf(why, sizeof why, "in_channels=%d, squeeze_channels=%d", (int)p->channels, (int)p->squeeze);
    snprintf(n, sizeof n, "%s.weight", nm->fc1);
    if ((r = vit__bind(L, &w->fc1_w, n, 4, p->squeeze, p->channels, 1, 1, why)) != VIT_OK) return r;
    snprintf(n, sizeof n, "%s.bias", nm->fc1);
    if ((r = vit__bind(L, &w->fc1_b, n, 1, p->squeeze, 0, 0, 0, why)) != VIT_OK) return r;
    snprintf(n, sizeof n, "%s.weight", nm->fc2);
    if ((r = vit__bind(L, &w->fc2_w, n, 4, p->channels, p->squeeze, 1, 1, why)) != VIT_OK) return r;
    snprintf(n, sizeof n, "%s.bias", nm->fc2);
    return vit__bind(L, &w->fc2_b, n, 1, p->channels, 0, 0, 0, why);
}

static vit_result vit__se_run(const vit_model *m, vit_arena *a, const vit_tensor *x, const vit_forward_opts *o,
                              vit_tensor *out) {
    return vit_se_forward(a, &m->se, &m->se_w, x, out, o ? o->attn : NULL);
}

static void vit__se_describe(const vit_model *m, vit__buf *b) {
    vit__bprintf(
        b, "  gates sigmoid(fc2(relu(fc1(mean over H, W)))), %d -> %d -> %d channels, times x\n  input (B, %d, H, W)\n",
        (int)m->se.channels, (int)m->se.squeeze, (int)m->se.channels, (int)m->se.channels);
}

static vit_result vit__se_input(const vit_model *m, int32_t B, int32_t n, int32_t w, int32_t *ndim, int32_t *shape) {
    return vit__shape(ndim, shape, 4, B, m->se.channels, n, w);
}

/* ---- modules: scaled dot-product self-attention ---- */
/* "Attention Is All You Need" (Vaswani et al. 2017), a
   ScaledDotSelfAttention after minGPT's: separate query, key and value
   linears, one head, softmax(q k^T / sqrt(C)) v, no output projection.
   Layout (B, N, C). Weights query.weight, key.weight, value.weight (C, C)
   and their biases (C). */

static vit_result vit__sdsa_ready(int32_t C, const vit_sdsa_weights *w) {
    if (C < 1 || !w->q_b.data || !w->k_b.data || !w->v_b.data)
        return vit__fail(VIT_ERR_ARG, "sdsa: params or weights not set");
    return vit__ws_ok("sdsa", 3, "q_w", &w->q_w, "k_w", &w->k_w, "v_w", &w->v_w);
}

/* y (B*N, C) from x; att (B, N, N) keeps the probabilities, or NULL for
   scratch released on return. */
static vit_result vit__sdsa_core(vit_arena *a, int32_t C, const vit_sdsa_weights *w, const float *x, float *y,
                                 float *att, int32_t B, int32_t N) {
    size_t mark = vit_arena_mark(a);
    vit_tensor q, k, v, vt, sc;
    vit_result r;
    void *xs;
    if ((r = vit__fits((double)B * N * (N > C ? N : C), B, "sdsa")) != VIT_OK) return r;
    if ((r = vit__tensor4(a, &q, 3, B, N, C, 1)) != VIT_OK || (r = vit__tensor4(a, &k, 3, B, N, C, 1)) != VIT_OK ||
        (r = vit__tensor4(a, &v, 3, B, N, C, 1)) != VIT_OK || (r = vit__tensor4(a, &vt, 3, B, C, N, 1)) != VIT_OK)
        return r;
    if (!att) {
        if ((r = vit__tensor4(a, &sc, 3, B, N, N, 1)) != VIT_OK) return r;
        att = sc.data;
    }
    if ((r = vit__scratch(
             a,
             vit__dense_scratch(vit__dense_scratch(vit__dense_scratch(0, &w->q_w, B * N, C), &w->k_w, B * N, C),
                                &w->v_w, B * N, C),
             &xs)) != VIT_OK)
        return r;
    if (!vit_arena_counting(a)) {
        vit__dense(q.data, x, &w->q_w, w->q_b.data, B * N, C, C, xs);
        vit__dense(k.data, x, &w->k_w, w->k_b.data, B * N, C, C, xs);
        vit__dense(v.data, x, &w->v_w, w->v_b.data, B * N, C, C, xs);
        vit_attn_shape sh = vit__attn_shape(B, N, 1, C, C, 1.0f / sqrtf((float)C), 1.0f);
        vit_k_attention(y, att, vt.data, q.data, k.data, v.data, &sh);
    }
    vit_arena_rewind(a, mark);
    return VIT_OK;
}

VITDEF vit_result vit_sdsa_forward(vit_arena *a, const vit_sdsa_params *p, const vit_sdsa_weights *w,
                                   const vit_tensor *x, vit_tensor *out, vit_tensor *attn) {
    vit_tensor y, att;
    vit_result r;
    if (!a || !p || !w || !out) return vit__fail(VIT_ERR_ARG, "sdsa: NULL argument");
    if ((r = vit__sdsa_ready(p->dim, w)) != VIT_OK || (r = vit__need3(x, "sdsa", p->dim)) != VIT_OK) return r;
    if ((r = vit__fits((double)x->shape[0] * x->shape[1] * (x->shape[1] > p->dim ? x->shape[1] : p->dim), x->shape[0],
                       "sdsa")) != VIT_OK)
        return r;
    if ((r = vit__tensor4(a, &y, 3, x->shape[0], x->shape[1], p->dim, 1)) != VIT_OK) return r;
    if (attn && (r = vit__tensor4(a, &att, 3, x->shape[0], x->shape[1], x->shape[1], 1)) != VIT_OK) return r;
    if ((r = vit__sdsa_core(a, p->dim, w, x->data, y.data, attn ? att.data : NULL, x->shape[0], x->shape[1])) != VIT_OK)
        return r;
    if (attn) *attn = att;
    *out = y;
    return VIT_OK;
}

/* The loader's hooks. */
typedef struct vit__sdsa_naming { const char *naming, *q, *k, *v; } vit__sdsa_naming;
static const vit__sdsa_naming vit__sdsa_names[] = {{"default", "query", "key", "value"}};

static const vit__key vit__sdsa_keys[] = {VIT__INT("n_embd", 1, 1 << 20, sdsa.dim), VIT__KEYS_END};

static vit_result vit__sdsa_check(vit_model *m, vit__ld *L) { (void)m; (void)L; return VIT_OK; }

static vit_result vit__sdsa_bind_w(vit__ld *L, vit_sdsa_weights *w, const char *prefix, const vit__sdsa_naming *nm,
                                   int32_t C, const char *why) {
    vit_result r;
    if ((r = vit__bind_linear(L, &w->q_w, &w->q_b, prefix, nm->q, C, C, why)) != VIT_OK ||
        (r = vit__bind_linear(L, &w->k_w, &w->k_b, prefix, nm->k, C, C, why)) != VIT_OK)
        return r;
    return vit__bind_linear(L, &w->v_w, &w->v_b, prefix, nm->v, C, C, why);
}

static vit_result vit__sdsa_bind(vit__ld *L, vit_model *m, const void *names) {
    char why[64];
    snprintf(why, sizeof why, "n_embd=%d", (int)m->sdsa.dim);
    return vit__sdsa_bind_w(L, &m->sdsa_w, "", (const vit__sdsa_naming *)names, m->sdsa.dim, why);
}

static vit_result vit__sdsa_run(const vit_model *m, vit_arena *a, const vit_tensor *x, const vit_forward_opts *o,
                                vit_tensor *out) {
    return vit_sdsa_forward(a, &m->sdsa, &m->sdsa_w, x, out, o ? o->attn : NULL);
}

static void vit__sdsa_describe(const vit_model *m, vit__buf *b) {
    vit__bprintf(b, "  softmax(q k^T / sqrt(C)) v, one head, no output projection\n  input (B, N, %d)\n",
                 (int)m->sdsa.dim);
}

static vit_result vit__sdsa_input(const vit_model *m, int32_t B, int32_t n, int32_t w, int32_t *ndim, int32_t *shape) {
    (void)w;
    return vit__shape(ndim, shape, 3, B, n, m->sdsa.dim, 1);
}

/* ---- modules: patch-sequence classifier ---- */
/* An image cut into N patches of C values (16 of 7x7 for MNIST),
   ScaledDotSelfAttention, ReLU, flatten, then Linear(N*C, classes): the
   tutorials' MNIST classifier.
   Input (B, N, C), output (B, num_classes) logits. Weights attn.query.*,
   attn.key.*, attn.value.* as vit_sdsa_forward, fc.weight (classes, N*C),
   fc.bias (classes). */

VITDEF vit_result vit_sdsa_classifier_forward(vit_arena *a, const vit_sdsa_classifier_params *p,
                                              const vit_sdsa_classifier_weights *w, const vit_tensor *x,
                                              vit_tensor *out, vit_tensor *attn) {
    vit_tensor y, att, h;
    vit_result r;
    char s[64];
    int32_t B, N, C;
    size_t mark;
    void *xs;
    if (!a || !p || !w || !out) return vit__fail(VIT_ERR_ARG, "sdsa_classifier: NULL argument");
    if (p->seq_len < 1 || p->num_classes < 1 || !w->fc_b.data)
        return vit__fail(VIT_ERR_ARG, "sdsa_classifier: params or weights not set");
    if ((r = vit__ws_ok("sdsa_classifier", 1, "fc_w", &w->fc_w)) != VIT_OK) return r;
    if ((r = vit__sdsa_ready(p->dim, &w->attn)) != VIT_OK) return r;
    if (!x || !x->data) return vit__fail(VIT_ERR_ARG, "sdsa_classifier: input is NULL");
    if (x->ndim != 3 || x->shape[1] != p->seq_len || x->shape[2] != p->dim)
        return vit__fail(
            VIT_ERR_SHAPE, "sdsa_classifier: input has shape %s, expected (B, %d, %d): %d patches of %d values",
            vit_tensor_shape_str(x, s, sizeof s), (int)p->seq_len, (int)p->dim, (int)p->seq_len, (int)p->dim);
    B = x->shape[0]; N = p->seq_len; C = p->dim;
    if ((r = vit__fits((double)B * N * (N > C ? N : C), B, "sdsa_classifier")) != VIT_OK) return r;
    if ((r = vit__tensor4(a, &y, 2, B, p->num_classes, 1, 1)) != VIT_OK) return r;
    if (attn && (r = vit__tensor4(a, &att, 3, B, N, N, 1)) != VIT_OK) return r;
    mark = vit_arena_mark(a);
    if ((r = vit__tensor4(a, &h, 3, B, N, C, 1)) != VIT_OK) return r;
    if ((r = vit__sdsa_core(a, C, &w->attn, x->data, h.data, attn ? att.data : NULL, B, N)) != VIT_OK) return r;
    if ((r = vit__scratch(a, vit__dense_scratch(0, &w->fc_w, B, N * C), &xs)) != VIT_OK) return r;
    if (!vit_arena_counting(a)) {
        vit_k_relu(h.data, h.data, B * N * C);
        vit__dense(y.data, h.data, &w->fc_w, w->fc_b.data, B, N * C, p->num_classes, xs); /* x.view(B, -1) */
    }
    vit_arena_rewind(a, mark);
    if (attn) *attn = att;
    *out = y;
    return VIT_OK;
}

/* The loader's hooks. */
typedef struct vit__sdsa_classifier_naming {
    const char *naming, *attn, *fc;     /* attn: the prefix of the attention's names */
    const vit__sdsa_naming *attn_names;
} vit__sdsa_classifier_naming;

static const vit__sdsa_classifier_naming vit__sdsa_classifier_names[] = {
    {"default", "attn.", "fc", &vit__sdsa_names[0]}};

static const vit__key vit__sdsa_classifier_keys[] = {
    VIT__INT("n_embd", 1, 1 << 20, sdsa_classifier.dim), VIT__INT("seq_len", 1, 1 << 20, sdsa_classifier.seq_len),
    VIT__INT("num_classes", 1, 1 << 24, sdsa_classifier.num_classes), VIT__KEYS_END};

static vit_result vit__sdsa_classifier_check(vit_model *m, vit__ld *L) {
    const char *src = vit__ld_src(L);
    const vit_sdsa_classifier_params *p = &m->sdsa_classifier;
    if ((double)p->dim * p->seq_len > (double)(1 << 24))
        return vit__fail(VIT_ERR_UNSUPPORTED, "%s: n_embd * seq_len = %.0f features is more than vit.h supports", src,
                         (double)p->dim * p->seq_len);
    return VIT_OK;
}

static vit_result vit__sdsa_classifier_bind(vit__ld *L, vit_model *m, const void *names) {
    const vit__sdsa_classifier_naming *nm = (const vit__sdsa_classifier_naming *)names;
    const vit_sdsa_classifier_params *p = &m->sdsa_classifier;
    vit_sdsa_classifier_weights *w = &m->sdsa_classifier_w;
    char why[96];
    vit_result r;
    snprintf(why, sizeof why, "n_embd=%d, seq_len=%d, num_classes=%d", (int)p->dim, (int)p->seq_len,
             (int)p->num_classes);
    if ((r = vit__sdsa_bind_w(L, &w->attn, nm->attn, nm->attn_names, p->dim, why)) != VIT_OK) return r;
    return vit__bind_linear(L, &w->fc_w, &w->fc_b, "", nm->fc, p->num_classes, p->dim * p->seq_len, why);
}

static vit_result vit__sdsa_classifier_run(const vit_model *m, vit_arena *a, const vit_tensor *x,
                                           const vit_forward_opts *o, vit_tensor *out) {
    return vit_sdsa_classifier_forward(a, &m->sdsa_classifier, &m->sdsa_classifier_w, x, out, o ? o->attn : NULL);
}

static void vit__sdsa_classifier_describe(const vit_model *m, vit__buf *b) {
    const vit_sdsa_classifier_params *p = &m->sdsa_classifier;
    vit__bprintf(
        b,
        "  %d patches of %d values -> one-head self-attention, ReLU, flatten, linear -> %d classes\n  input (B, %d, "
        "%d)\n",
        (int)p->seq_len, (int)p->dim, (int)p->num_classes, (int)p->seq_len, (int)p->dim);
}

static vit_result vit__sdsa_classifier_input(const vit_model *m, int32_t B, int32_t n, int32_t w, int32_t *ndim,
                                             int32_t *shape) {
    (void)n; (void)w;
    return vit__shape(ndim, shape, 3, B, m->sdsa_classifier.seq_len, m->sdsa_classifier.dim, 1);
}

/* ---- modules: efficient multi-head self-attention ---- */
/* EMSA from "ResT: An Efficient Transformer for Visual Recognition" (Zhang
   and Yang 2021), External-Attention-pytorch's EMSA (fc_q, fc_k, fc_v,
   fc_o, sr_conv, sr_ln, transform.conv) called as EMSA(x, x, x). Layout
   (B, N, C).
   Queries come from every token. With ratio r > 1, keys and values come
   from a reduced grid: the N = H*W tokens as an H x W image, a depth-wise
   conv (kernel r+1, stride r, padding r/2), LayerNorm (eps 1e-5), giving N'
   tokens; otherwise N' = N. Scores q k^T / sqrt(d_k) per head, then either
   softmax, or (transform, heads > 1) a 1x1 conv mixing the heads' maps,
   softmax, and InstanceNorm2d over each head's (N, N') map (eps 1e-5, no
   affine; so the rows no longer sum to 1, as in the seed). Then att v per
   head, heads concatenated, fc_o. Weights fc_q, fc_k, fc_v, fc_o (.weight,
   .bias), sr_conv.weight (C, 1, r+1, r+1), sr_conv.bias, sr_ln.weight,
   sr_ln.bias (ratio > 1), transform.conv.weight (NH, NH, 1, 1),
   transform.conv.bias (transform). */

VITDEF vit_result vit_emsa_forward(vit_arena *a, const vit_emsa_params *p, const vit_emsa_weights *w,
                                   const vit_tensor *x, vit_tensor *out, vit_tensor *attn) {
    vit_tensor y, att, q, k, v, o, src, wt, s2, st;
    vit_result r;
    int32_t B, N, Nk, C, NH, dk, dv, R, H = 0, W = 0, Ho = 0, Wo = 0, i;
    int tr;
    size_t mark, xb;
    void *xs;
    double big;

    /* the params and the weights they ask for */
    if (!a || !p || !w || !out) return vit__fail(VIT_ERR_ARG, "emsa: NULL argument");
    C = p->dim; NH = p->heads; dk = p->d_k; dv = p->d_v; R = p->ratio;
    tr = p->transform && NH > 1;
    if (C < 1 || NH < 1 || dk < 1 || dv < 1 || !w->q_b.data || !w->k_b.data || !w->v_b.data || !w->o_b.data ||
        (R > 1 && (!w->sr_w.data || !w->ln_w.data || !w->ln_b.data)) || (tr && !w->tr_w.data))
        return vit__fail(VIT_ERR_ARG, "emsa: params or weights not set");
    if ((r = vit__ws_ok("emsa", 4, "q_w", &w->q_w, "k_w", &w->k_w, "v_w", &w->v_w, "o_w", &w->o_w)) != VIT_OK) return r;
    if (R > 65536) return vit__fail(VIT_ERR_ARG, "emsa: ratio %d is larger than 65536", (int)R);

    /* the input (B, N, C); a reduction (R > 1) needs its tokens to be the H x W grid */
    if ((r = vit__need3(x, "emsa", C)) != VIT_OK) return r;
    B = x->shape[0]; N = x->shape[1]; Nk = N;
    if (R > 1) {
        H = p->height; W = p->width;
        if (H < 1 || W < 1 || (double)H * W != (double)N)
            return vit__fail(VIT_ERR_SHAPE,
                             "emsa: %d tokens are not the %dx%d grid that ratio %d needs (N must equal H*W)", (int)N,
                             (int)H, (int)W, (int)R);
        if (H + 2 * (R / 2) < R + 1 || W + 2 * (R / 2) < R + 1)
            return vit__fail(VIT_ERR_SHAPE, "emsa: the %dx%d grid is smaller than the %dx%d reduction kernel", (int)H,
                             (int)W, (int)R + 1, (int)R + 1);
        Ho = (H + 2 * (R / 2) - (R + 1)) / R + 1;
        Wo = (W + 2 * (R / 2) - (R + 1)) / R + 1;
        Nk = Ho * Wo;
    }

    /* y and the maps asked for stay; everything after the mark is scratch */
    big = (double)NH * (dk > dv ? dk : dv);
    if ((r = vit__fits((double)B * N * (big > C ? big : C), B, "emsa")) != VIT_OK ||
        (r = vit__fits((double)B * NH * N * Nk, B, "emsa attention")) != VIT_OK)
        return r;
    if ((r = vit__tensor4(a, &y, 3, B, N, C, 1)) != VIT_OK) return r;
    if (attn && (r = vit__tensor4(a, &att, 4, B, NH, N, Nk)) != VIT_OK) return r;
    mark = vit_arena_mark(a);
    if (!attn && (r = vit__tensor4(a, &att, 4, B, NH, N, Nk)) != VIT_OK) return r;
    if ((r = vit__tensor4(a, &q, 3, B, N, NH * dk, 1)) != VIT_OK ||
        (r = vit__tensor4(a, &k, 3, B, Nk, NH * dk, 1)) != VIT_OK ||
        (r = vit__tensor4(a, &v, 3, B, Nk, NH * dv, 1)) != VIT_OK ||
        (r = vit__tensor4(a, &o, 3, B, N, NH * dv, 1)) != VIT_OK)
        return r;
    if (R > 1 && ((r = vit__tensor4(a, &src, 3, B, Nk, C, 1)) != VIT_OK ||
                  (r = vit__tensor4(a, &wt, 2, (R + 1) * (R + 1), C, 1, 1)) != VIT_OK))
        return r;
    /* st: mean, var, scale, shift of each (batch, head) map */
    if (tr && ((r = vit__tensor4(a, &s2, 4, B, NH, N, Nk)) != VIT_OK ||
               (r = vit__tensor4(a, &st, 2, 4, B * NH, 1, 1)) != VIT_OK))
        return r;
    xb = vit__dense_scratch(vit__dense_scratch(vit__dense_scratch(0, &w->q_w, B * N, C), &w->k_w, B * Nk, C), &w->v_w,
                            B * Nk, C);
    if ((r = vit__scratch(a, vit__dense_scratch(xb, &w->o_w, B * N, NH * dv), &xs)) != VIT_OK) return r;
    if (!vit_arena_counting(a)) {
        const float *kv = x->data;
        vit_heads_shape hs;
        hs.B = B; hs.NH = NH; hs.Nq = N; hs.Nk = Nk; hs.HS = dk; hs.ldq = hs.ldk = NH * dk; hs.ldv = NH * dv;
        hs.scale = 1.0f / sqrtf((float)dk);

        /* queries from the tokens; keys and values from the tokens, or from the strided conv's grid */
        vit__dense(q.data, x->data, &w->q_w, w->q_b.data, B * N, C, NH * dk, xs);
        if (R > 1) {
            /* (B, N, C) is (B, H, W, C): the conv runs channels last */
            vit_conv_shape cs;
            cs.B = B; cs.H = H; cs.W = W; cs.C = C; cs.K = R + 1; cs.stride = R; cs.pad = R / 2;
            vit_k_dwconv(src.data, wt.data, x->data, w->sr_w.data, w->sr_b.data, &cs);
            vit_k_layernorm(src.data, src.data, w->ln_w.data, w->ln_b.data, B * Nk, C, 1e-5f);
            kv = src.data;
        }
        vit__dense(k.data, kv, &w->k_w, w->k_b.data, B * Nk, C, NH * dk, xs);
        vit__dense(v.data, kv, &w->v_w, w->v_b.data, B * Nk, C, NH * dv, xs);

        /* the maps: softmax of the scores, or the transform's head mixing, softmax and InstanceNorm */
        vit_k_scores(tr ? s2.data : att.data, q.data, k.data, &hs);
        if (tr) {
            float *mean = st.data, *var = mean + B * NH, *sc = var + B * NH, *sh = sc + B * NH;
            vit_k_conv1x1(att.data, s2.data, w->tr_w.data, w->tr_b.data, B, NH, NH, N * Nk); /* mixes the heads */
            vit_k_softmax(att.data, att.data, B * NH * N, Nk);
            /* InstanceNorm2d(NH): PyTorch's batch-norm arithmetic, x * a + b */
            vit_k_rowstats(mean, var, att.data, B * NH, N * Nk);
            for (i = 0; i < B * NH; i++) {
                sc[i] = 1.0f / sqrtf(var[i] + 1e-5f);
                sh[i] = -mean[i] * sc[i];
            }
            vit_k_rowaffine(att.data, att.data, sc, sh, B * NH, N * Nk);
        } else
            vit_k_softmax(att.data, att.data, B * NH * N, Nk);

        /* maps times values, then the output projection */
        hs.HS = dv; /* values have their own head size */
        vit_k_attend(o.data, NULL, att.data, v.data, &hs);
        vit__dense(y.data, o.data, &w->o_w, w->o_b.data, B * N, NH * dv, C, xs);
    }

    /* the scratch back to the arena; y and the maps stay */
    vit_arena_rewind(a, mark);
    if (attn) *attn = att;
    *out = y;
    return VIT_OK;
}

/* The loader's hooks. */
typedef struct vit__emsa_naming { const char *naming, *q, *k, *v, *o, *sr, *ln, *tr; } vit__emsa_naming;
static const vit__emsa_naming vit__emsa_names[] = {
    {"default", "fc_q", "fc_k", "fc_v", "fc_o", "sr_conv", "sr_ln", "transform.conv"}};

static const vit__key vit__emsa_keys[] = {VIT__INT("d_model", 1, 1 << 20, emsa.dim),
                                          VIT__INT("d_k", 1, 1 << 20, emsa.d_k),
                                          VIT__INT("d_v", 1, 1 << 20, emsa.d_v),
                                          VIT__INT("h", 1, 65536, emsa.heads),
                                          VIT__INT("H", 1, 1 << 20, emsa.height),
                                          VIT__INT("W", 1, 1 << 20, emsa.width),
                                          VIT__INT("ratio", 0, 1024, emsa.ratio),
                                          VIT__INT("apply_transform", 0, 1, emsa.transform),
                                          VIT__KEYS_END};

static vit_result vit__emsa_check(vit_model *m, vit__ld *L) {
    const vit_emsa_params *p = &m->emsa;
    if ((double)p->heads * (p->d_k > p->d_v ? p->d_k : p->d_v) > (double)(1 << 24))
        return vit__fail(VIT_ERR_UNSUPPORTED, "%s: h * d_k or h * d_v is more than vit.h supports", vit__ld_src(L));
    return VIT_OK;
}

static vit_result vit__emsa_bind(vit__ld *L, vit_model *m, const void *names) {
    const vit__emsa_naming *nm = (const vit__emsa_naming *)names;
    const vit_emsa_params *p = &m->emsa;
    vit_emsa_weights *w = &m->emsa_w;
    int32_t C = p->dim, NH = p->heads, R = p->ratio;
    char why[160], n[256];
    vit_result r;
    snprintf(why, sizeof why, "d_model=%d, d_k=%d, d_v=%d, h=%d, ratio=%d, apply_transform=%d", (int)C, (int)p->d_k,
             (int)p->d_v, (int)NH, (int)R, (int)p->transform);
    if ((r = vit__bind_linear(L, &w->q_w, &w->q_b, "", nm->q, NH * p->d_k, C, why)) != VIT_OK ||
        (r = vit__bind_linear(L, &w->k_w, &w->k_b, "", nm->k, NH * p->d_k, C, why)) != VIT_OK ||
        (r = vit__bind_linear(L, &w->v_w, &w->v_b, "", nm->v, NH * p->d_v, C, why)) != VIT_OK ||
        (r = vit__bind_linear(L, &w->o_w, &w->o_b, "", nm->o, C, NH * p->d_v, why)) != VIT_OK)
        return r;
    if (R > 1) {
        snprintf(n, sizeof n, "%s.weight", nm->sr);
        if ((r = vit__bind(L, &w->sr_w, n, 4, C, 1, R + 1, R + 1, why)) != VIT_OK) return r;
        snprintf(n, sizeof n, "%s.bias", nm->sr);
        if ((r = vit__bind(L, &w->sr_b, n, 1, C, 0, 0, 0, why)) != VIT_OK) return r;
        if ((r = vit__bind_ln(L, &w->ln_w, &w->ln_b, "", nm->ln, C, why)) != VIT_OK) return r;
    }
    if (p->transform && NH > 1) {
        snprintf(n, sizeof n, "%s.weight", nm->tr);
        if ((r = vit__bind(L, &w->tr_w, n, 4, NH, NH, 1, 1, why)) != VIT_OK) return r;
        snprintf(n, sizeof n, "%s.bias", nm->tr);
        if ((r = vit__bind(L, &w->tr_b, n, 1, NH, 0, 0, 0, why)) != VIT_OK) return r;
    }
    return VIT_OK;
}

static vit_result vit__emsa_run(const vit_model *m, vit_arena *a, const vit_tensor *x, const vit_forward_opts *o,
                                vit_tensor *out) {
    return vit_emsa_forward(a, &m->emsa, &m->emsa_w, x, out, o ? o->attn : NULL);
}

static void vit__emsa_describe(const vit_model *m, vit__buf *b) {
    const vit_emsa_params *p = &m->emsa;
    vit__bprintf(b, "  %d heads, d_k %d, d_v %d", (int)p->heads, (int)p->d_k, (int)p->d_v);
    if (p->ratio > 1) vit__bprintf(b, ", keys and values from the grid shrunk %d times", (int)p->ratio);
    if (p->transform && p->heads > 1) vit__bprintf(b, ", heads mixed before the softmax, InstanceNorm after");
    if (p->ratio > 1)
        vit__bprintf(b, "\n  input (B, %d, %d): a %dx%d grid\n", (int)(p->height * p->width), (int)p->dim,
                     (int)p->height, (int)p->width);
    else vit__bprintf(b, "\n  input (B, N, %d)\n", (int)p->dim);
}

static vit_result vit__emsa_input(const vit_model *m, int32_t B, int32_t n, int32_t w, int32_t *ndim, int32_t *shape) {
    (void)w;
    return vit__shape(ndim, shape, 3, B, m->emsa.ratio > 1 ? m->emsa.height * m->emsa.width : n, m->emsa.dim, 1);
}

/* ---- modules: shuffle attention ---- */
/* "SA-Net: Shuffle Attention for Deep Convolutional Neural Networks" (Zhang
   and Yang 2021): SA-Net's sa_layer, External-Attention-pytorch's
   ShuffleAttention. Layout (B, C, H, W). The C
   channels form G groups; each group's first half gets a channel gate
   sigmoid(cweight * mean_HW(x) + cbias), its second half a spatial gate
   sigmoid(sweight * GroupNorm(x) + sbias), GroupNorm(C/2G, C/2G) normalising
   each channel over H x W (eps 1e-5, gn.weight, gn.bias). The gated halves
   are concatenated, then shuffled with 2 groups: channel i*C/2 + j moves to
   2j + i. Weights cweight, cbias, sweight, sbias (1, C/2G, 1, 1), gn.weight,
   gn.bias (C/2G). The seed's init_weights is never called; nothing here
   depends on it. C must be a multiple of 2G: the seed's module also runs
   when C/G is 3 (its one-channel cweight then broadcasts over a two-channel
   half), an accident of its split that is refused here. */

VITDEF vit_result vit_shuffle_forward(vit_arena *a, const vit_shuffle_params *p, const vit_shuffle_weights *w,
                                      const vit_tensor *x, vit_tensor *out, vit_tensor *attn) {
    vit_tensor y, cg, sg, pre, st;
    vit_result r;
    int32_t B, C, G, Ch, HW, q, c, bi;
    size_t mark;

    /* the params, the weights, and channels that split into groups of two halves */
    if (!a || !p || !w || !out) return vit__fail(VIT_ERR_ARG, "shuffle: NULL argument");
    C = p->channels; G = p->groups;
    if (C < 1 || G < 1 || !w->cweight.data || !w->cbias.data || !w->sweight.data || !w->sbias.data || !w->gn_w.data ||
        !w->gn_b.data)
        return vit__fail(VIT_ERR_ARG, "shuffle: params or weights not set");
    if (C % (2 * G))
        return vit__fail(VIT_ERR_ARG,
                         "shuffle: %d channels do not split into %d groups of two equal halves (C %% 2G != 0)", (int)C,
                         (int)G);

    /* the input (B, C, H, W) and the sizes */
    if ((r = vit__need4(x, "shuffle", C, 0)) != VIT_OK) return r;
    B = x->shape[0]; Ch = C / (2 * G);
    if ((r = vit__fits((double)B * C * x->shape[2] * x->shape[3], B, "shuffle")) != VIT_OK) return r;
    HW = x->shape[2] * x->shape[3];

    /* y and the gates asked for stay; everything after the mark is scratch */
    if ((r = vit_tensor_init(a, &y, 4, x->shape)) != VIT_OK) return r;
    if (attn && (r = vit__tensor4(a, &cg, 2, B, C / 2, 1, 1)) != VIT_OK) return r;
    if (attn && (r = vit__tensor4(a, &sg, 4, B, C / 2, x->shape[2], x->shape[3])) != VIT_OK) return r;
    mark = vit_arena_mark(a);
    if (!attn && (r = vit__tensor4(a, &cg, 2, B, C / 2, 1, 1)) != VIT_OK) return r;
    if (!attn && (r = vit__tensor4(a, &sg, 4, B, C / 2, x->shape[2], x->shape[3])) != VIT_OK) return r;
    /* pre: the gated halves before the shuffle; st: mean, var, scale, shift per channel of a group */
    if ((r = vit_tensor_init(a, &pre, 4, x->shape)) != VIT_OK || (r = vit__tensor4(a, &st, 2, 4, Ch, 1, 1)) != VIT_OK)
        return r;

    /* per (image, group): the channel half, then the spatial half; then the shuffle */
    if (!vit_arena_counting(a)) {
        float *mean = st.data, *var = mean + Ch, *sc = var + Ch, *sh = sc + Ch;
        for (q = 0; q < B * G; q++) {
            const float *x0 = x->data + (size_t)q * 2 * Ch * HW, *x1 = x0 + (size_t)Ch * HW;
            float *y0 = pre.data + (size_t)q * 2 * Ch * HW, *y1 = y0 + (size_t)Ch * HW;
            float *cq = cg.data + (size_t)q * Ch, *sq = sg.data + (size_t)q * Ch * HW;
            /* channel half: x0 * sigmoid(cweight * avgpool(x0) + cbias) */
            vit_k_rowstats(mean, NULL, x0, Ch, HW);
            vit_k_rowaffine(cq, mean, w->cweight.data, w->cbias.data, Ch, 1);
            vit_k_sigmoid(cq, cq, Ch);
            vit_k_rowaffine(y0, x0, cq, NULL, Ch, HW);
            /* spatial half: x1 * sigmoid(sweight * gn(x1) + sbias); GroupNorm
               as PyTorch computes it, x * (rstd w) + (b - mean rstd w) */
            vit_k_rowstats(mean, var, x1, Ch, HW);
            for (c = 0; c < Ch; c++) {
                sc[c] = w->gn_w.data[c] / sqrtf(var[c] + 1e-5f);
                sh[c] = w->gn_b.data[c] - mean[c] * sc[c];
            }
            vit_k_rowaffine(sq, x1, sc, sh, Ch, HW);
            vit_k_rowaffine(sq, sq, w->sweight.data, w->sbias.data, Ch, HW);
            vit_k_sigmoid(sq, sq, Ch * HW);
            vit_k_mul(y1, x1, sq, Ch * HW);
        }
        /* channel_shuffle(out, 2): channel i*C/2 + j goes to 2j + i */
        for (bi = 0; bi < B; bi++)
            for (c = 0; c < C; c++)
                memcpy(y.data + ((size_t)bi * C + (size_t)(c % (C / 2)) * 2 + c / (C / 2)) * HW,
                       pre.data + ((size_t)bi * C + c) * HW, (size_t)HW * sizeof(float));
    }

    /* the scratch back to the arena; y and the gates stay */
    vit_arena_rewind(a, mark);
    if (attn) attn[0] = cg;
    if (attn) attn[1] = sg;
    *out = y;
    return VIT_OK;
}

/* The loader's hooks. */
typedef struct vit__shuffle_naming { const char *naming, *cw, *cb, *sw, *sb, *gn; } vit__shuffle_naming;
static const vit__shuffle_naming vit__shuffle_names[] = {{"default", "cweight", "cbias", "sweight", "sbias", "gn"}};

static const vit__key vit__shuffle_keys[] = {
    VIT__INT("channel", 1, 1 << 20, shuffle.channels), VIT__INT("G", 1, 1 << 20, shuffle.groups), VIT__KEYS_END};

static vit_result vit__shuffle_check(vit_model *m, vit__ld *L) {
    if (m->shuffle.channels % (2 * m->shuffle.groups))
        return vit__fail(VIT_ERR_FORMAT,
                         "%s: channel %d is not a multiple of 2 * G = %d (each group splits into two equal halves)",
                         vit__ld_src(L), (int)m->shuffle.channels, (int)(2 * m->shuffle.groups));
    return VIT_OK;
}

static vit_result vit__shuffle_bind(vit__ld *L, vit_model *m, const void *names) {
    const vit__shuffle_naming *nm = (const vit__shuffle_naming *)names;
    vit_shuffle_weights *w = &m->shuffle_w;
    int32_t Ch = m->shuffle.channels / (2 * m->shuffle.groups);
    char why[64];
    vit_result r;
    snprintf(why, sizeof why, "channel=%d, G=%d", (int)m->shuffle.channels, (int)m->shuffle.groups);
    if ((r = vit__bind(L, &w->cweight, nm->cw, 4, 1, Ch, 1, 1, why)) != VIT_OK ||
        (r = vit__bind(L, &w->cbias, nm->cb, 4, 1, Ch, 1, 1, why)) != VIT_OK ||
        (r = vit__bind(L, &w->sweight, nm->sw, 4, 1, Ch, 1, 1, why)) != VIT_OK ||
        (r = vit__bind(L, &w->sbias, nm->sb, 4, 1, Ch, 1, 1, why)) != VIT_OK)
        return r;
    return vit__bind_ln(L, &w->gn_w, &w->gn_b, "", nm->gn, Ch, why);
}

static vit_result vit__shuffle_run(const vit_model *m, vit_arena *a, const vit_tensor *x, const vit_forward_opts *o,
                                   vit_tensor *out) {
    return vit_shuffle_forward(a, &m->shuffle, &m->shuffle_w, x, out, o ? o->attn : NULL);
}

static void vit__shuffle_describe(const vit_model *m, vit__buf *b) {
    vit__bprintf(
        b,
        "  %d groups, each half channel-gated and half spatially gated, then a channel shuffle\n  input (B, %d, H, "
        "W)\n",
        (int)m->shuffle.groups, (int)m->shuffle.channels);
}

static vit_result vit__shuffle_input(const vit_model *m, int32_t B, int32_t n, int32_t w, int32_t *ndim,
                                     int32_t *shape) {
    return vit__shape(ndim, shape, 4, B, m->shuffle.channels, n, w);
}

/* ---- modules: spatial group-wise enhance ---- */
/* "Spatial Group-wise Enhance" (Li, Hu and Yang 2019), PytorchInsight's and
   External-Attention-pytorch's
   SpatialGroupEnhance. Layout (B, C, H, W), C a multiple of G. In each group
   of C/G channels, t = sum_c x * mean_HW(x) is the map of similarity to the
   group's mean feature; t is centred and divided by its unbiased standard
   deviation plus 1e-5 (the seed's formula: plus, not under the root), then
   gate = sigmoid(t * weight[g] + bias[g]) scales every channel of the
   group. Weights weight, bias (1, G, 1, 1). H*W >= 2: the unbiased std of a
   single value is NaN in PyTorch, and refused here. */

VITDEF vit_result vit_sge_forward(vit_arena *a, const vit_sge_params *p, const vit_sge_weights *w, const vit_tensor *x,
                                  vit_tensor *out, vit_tensor *attn) {
    vit_tensor y, t, avg, st;
    vit_result r;
    int32_t B, C, G, Cg, HW, q, c;
    size_t mark;

    /* the params and weights, then the input (B, C, H, W) */
    if (!a || !p || !w || !out) return vit__fail(VIT_ERR_ARG, "sge: NULL argument");
    G = p->groups;
    if (G < 1 || !w->weight.data || !w->bias.data) return vit__fail(VIT_ERR_ARG, "sge: params or weights not set");
    if ((r = vit__need4(x, "sge", 0, 0)) != VIT_OK) return r;
    B = x->shape[0]; C = x->shape[1];
    if (C % G) return vit__fail(VIT_ERR_SHAPE, "sge: %d channels do not split into %d groups", (int)C, (int)G);
    if ((r = vit__fits((double)B * C * x->shape[2] * x->shape[3], B, "sge")) != VIT_OK) return r;
    HW = x->shape[2] * x->shape[3]; Cg = C / G;
    if (HW < 2)
        return vit__fail(VIT_ERR_SHAPE, "sge: a 1x1 input has no spatial spread (its unbiased std is NaN in PyTorch)");

    /* y and the map asked for stay; everything after the mark is scratch */
    if ((r = vit_tensor_init(a, &y, 4, x->shape)) != VIT_OK) return r;
    if (attn && (r = vit__tensor4(a, &t, 4, B, G, x->shape[2], x->shape[3])) != VIT_OK) return r;
    mark = vit_arena_mark(a);
    if (!attn && (r = vit__tensor4(a, &t, 4, B, G, x->shape[2], x->shape[3])) != VIT_OK) return r;
    /* st: mean, var, scale, shift of each group's map */
    if ((r = vit__tensor4(a, &avg, 2, B, C, 1, 1)) != VIT_OK || (r = vit__tensor4(a, &st, 2, 4, B * G, 1, 1)) != VIT_OK)
        return r;

    /* per group: similarity to the group's mean feature, normalised over space, as a gate */
    if (!vit_arena_counting(a)) {
        float *mean = st.data, *var = mean + B * G, *sc = var + B * G, *sh = sc + B * G;
        vit_k_rowstats(avg.data, NULL, x->data, B * C, HW); /* avg_pool */
        for (q = 0; q < B * G; q++) /* (x * avg).sum(dim=1): a 1x1 conv with the group's means as weights */
            vit_k_conv1x1(t.data + (size_t)q * HW, x->data + (size_t)q * Cg * HW, avg.data + (size_t)q * Cg, NULL, 1,
                          Cg, 1, HW);
        vit_k_rowstats(mean, var, t.data, B * G, HW);
        for (q = 0; q < B * G; q++) { sc[q] = 1.0f; sh[q] = -mean[q]; }
        vit_k_rowaffine(t.data, t.data, sc, sh, B * G, HW); /* t - t.mean() */
        for (q = 0; q < B * G; q++) {
            float sd = sqrtf(var[q] * (float)HW / (float)(HW - 1)) + 1e-5f; /* t.std() + 1e-5 */
            sc[q] = w->weight.data[q % G] / sd;
            sh[q] = w->bias.data[q % G];
        }
        vit_k_rowaffine(t.data, t.data, sc, sh, B * G, HW); /* t / std * weight + bias */
        vit_k_sigmoid(t.data, t.data, B * G * HW);
        for (q = 0; q < B * G; q++)
            for (c = 0; c < Cg; c++) {
                size_t off = ((size_t)q * Cg + c) * HW;
                vit_k_mul(y.data + off, x->data + off, t.data + (size_t)q * HW, HW);
            }
    }

    /* the scratch back to the arena; y and the map stay */
    vit_arena_rewind(a, mark);
    if (attn) *attn = t;
    *out = y;
    return VIT_OK;
}

/* The loader's hooks. */
typedef struct vit__sge_naming { const char *naming, *w, *b; } vit__sge_naming;
static const vit__sge_naming vit__sge_names[] = {{"default", "weight", "bias"}};

static const vit__key vit__sge_keys[] = {VIT__INT("groups", 1, 1 << 20, sge.groups), VIT__KEYS_END};

static vit_result vit__sge_check(vit_model *m, vit__ld *L) { (void)m; (void)L; return VIT_OK; }

static vit_result vit__sge_bind(vit__ld *L, vit_model *m, const void *names) {
    const vit__sge_naming *nm = (const vit__sge_naming *)names;
    int32_t G = m->sge.groups;
    char why[32];
    vit_result r;
    snprintf(why, sizeof why, "groups=%d", (int)G);
    if ((r = vit__bind(L, &m->sge_w.weight, nm->w, 4, 1, G, 1, 1, why)) != VIT_OK) return r;
    return vit__bind(L, &m->sge_w.bias, nm->b, 4, 1, G, 1, 1, why);
}

static vit_result vit__sge_run(const vit_model *m, vit_arena *a, const vit_tensor *x, const vit_forward_opts *o,
                               vit_tensor *out) {
    return vit_sge_forward(a, &m->sge, &m->sge_w, x, out, o ? o->attn : NULL);
}

static void vit__sge_describe(const vit_model *m, vit__buf *b) {
    vit__bprintf(
        b,
        "  %d groups, each gated by its normalised similarity to its mean\n  input (B, C, H, W), C a multiple of "
        "%d, H*W >= 2\n",
        (int)m->sge.groups, (int)m->sge.groups);
}

static vit_result vit__sge_input(const vit_model *m, int32_t B, int32_t n, int32_t w, int32_t *ndim, int32_t *shape) {
    return vit__shape(ndim, shape, 4, B, 2 * m->sge.groups, n, w);
}

/* ---- modules: attention free transformer ---- */
/* "An Attention Free Transformer" (Zhai et al. 2021), External-Attention-
   pytorch's and rish-16/aft-pytorch's AFTFull,
   AFTSimple and AFTLocal (one head, as in the paper). Layout (B, T, D).
   q, k, v = to_q/to_k/to_v(x) (HD features); y = sigmoid(q) * (weighted
   mean of v over t'), weights e^(w[t][t'] + k[t']) (full), e^k[t'] (simple:
   softmax over tokens, linear in T) or, local, w[t][t'] kept for |t - t'| <
   s and 0 elsewhere; then project. The seed's AFTLocal zeroes its stored
   wbias in place on every forward; files keep the trained values, and the
   window is applied here instead (the same numbers). T <= max_seqlen for
   full and local (wbias[:T, :T]). See vit_k_aft for the numerics. Weights
   to_q, to_k, to_v (HD, D), project (D, HD) (.weight, .bias), wbias (M, M)
   (full, local). */

VITDEF vit_result vit_aft_forward(vit_arena *a, const vit_aft_params *p, const vit_aft_weights *w, const vit_tensor *x,
                                  vit_tensor *out, vit_tensor *attn) {
    vit_tensor y, att, q, k, v, h, scr;
    vit_result r;
    int32_t B, T, D, HD, M;
    int simple;
    size_t mark, xb;
    void *xs;

    /* the params (which variant) and the weights it asks for */
    if (!a || !p || !w || !out) return vit__fail(VIT_ERR_ARG, "aft: NULL argument");
    D = p->dim; HD = p->hidden_dim; M = p->max_seqlen;
    if (p->variant != VIT_AFT_FULL && p->variant != VIT_AFT_SIMPLE && p->variant != VIT_AFT_LOCAL)
        return vit__fail(VIT_ERR_ARG, "aft: variant %d is not full, simple or local", (int)p->variant);
    simple = p->variant == VIT_AFT_SIMPLE;
    if (D < 1 || HD < 1 || !w->q_b.data || !w->k_b.data ||
        !w->v_b.data || !w->proj_b.data ||
        (!simple && (M < 1 || !w->wbias.data)))
        return vit__fail(VIT_ERR_ARG, "aft: params or weights not set");
    if ((r = vit__ws_ok("aft", 4, "q_w", &w->q_w, "k_w", &w->k_w, "v_w", &w->v_w, "proj_w", &w->proj_w)) != VIT_OK)
        return r;

    /* the input (B, T, D); full and local read the top-left T x T of wbias */
    if ((r = vit__need3(x, "aft", D)) != VIT_OK) return r;
    B = x->shape[0]; T = x->shape[1];
    if (!simple && T > M)
        return vit__fail(VIT_ERR_SHAPE, "aft: %d tokens exceed max_seqlen %d (wbias is %dx%d)", (int)T, (int)M, (int)M,
                         (int)M);

    /* y and the weights map asked for stay; everything after the mark is scratch */
    if ((r = vit__fits((double)B * T * (D > HD ? D : HD), B, "aft")) != VIT_OK ||
        (!simple && (r = vit__fits((double)T * T + 4.0 * T * HD + HD, 1, "aft")) != VIT_OK) ||
        (attn && !simple && (r = vit__fits((double)B * HD * T * T, B, "aft weights")) != VIT_OK))
        return r;
    if ((r = vit__tensor4(a, &y, 3, B, T, D, 1)) != VIT_OK) return r;
    if (attn && (r = vit__tensor4(a, &att, 4, B, HD, simple ? 1 : T, T)) != VIT_OK) return r;
    mark = vit_arena_mark(a);
    if ((r = vit__tensor4(a, &q, 3, B, T, HD, 1)) != VIT_OK || (r = vit__tensor4(a, &k, 3, B, T, HD, 1)) != VIT_OK ||
        (r = vit__tensor4(a, &v, 3, B, T, HD, 1)) != VIT_OK || (r = vit__tensor4(a, &h, 3, B, T, HD, 1)) != VIT_OK)
        return r;
    if (!simple && (r = vit__tensor4(a, &scr, 1, T * T + 4 * T * HD + HD, 1, 1, 1)) != VIT_OK) return r;
    xb = vit__dense_scratch(vit__dense_scratch(vit__dense_scratch(0, &w->q_w, B * T, D), &w->k_w, B * T, D), &w->v_w,
                            B * T, D);
    if ((r = vit__scratch(a, vit__dense_scratch(xb, &w->proj_w, B * T, HD), &xs)) != VIT_OK) return r;

    /* q, k, v projections, the AFT core, the output projection */
    if (!vit_arena_counting(a)) {
        vit__dense(q.data, x->data, &w->q_w, w->q_b.data, B * T, D, HD, xs);
        vit__dense(k.data, x->data, &w->k_w, w->k_b.data, B * T, D, HD, xs);
        vit__dense(v.data, x->data, &w->v_w, w->v_b.data, B * T, D, HD, xs);
        if (simple) vit_k_aft_simple(h.data, attn ? att.data : NULL, q.data, k.data, v.data, B, T, HD);
        else {
            vit_aft_shape as; /* wbias is (M, M): its top-left (T, T) */
            as.B = B; as.T = T; as.D = HD; as.ldw = M; as.s = p->variant == VIT_AFT_LOCAL ? p->s : T;
            vit_k_aft(h.data, attn ? att.data : NULL, scr.data, q.data, k.data, v.data, w->wbias.data, &as);
        }
        vit__dense(y.data, h.data, &w->proj_w, w->proj_b.data, B * T, HD, D, xs);
    }

    /* the scratch back to the arena; y and the map stay */
    vit_arena_rewind(a, mark);
    if (attn) *attn = att;
    *out = y;
    return VIT_OK;
}

/* The loader's hooks. */
typedef struct vit__aft_naming { const char *naming, *q, *k, *v, *proj, *wbias; } vit__aft_naming;
static const vit__aft_naming vit__aft_names[] = {{"default", "to_q", "to_k", "to_v", "project", "wbias"}};

static const vit__key vit__aft_keys[] = {VIT__ENUM("variant", "full,simple,local", aft.variant),
                                         VIT__INT("dim", 1, 1 << 20, aft.dim),
                                         VIT__INT("hidden_dim", 1, 1 << 20, aft.hidden_dim),
                                         VIT__INT("max_seqlen", 0, 1 << 15, aft.max_seqlen), VIT__KEYS_END};

/* max_seqlen 0 only for AFT-simple (no position bias); s only for local. */
static vit_result vit__aft_check(vit_model *m, vit__ld *L) {
    static const vit__key s_key[] = {VIT__INT("s", 0, INT32_MAX, aft.s), VIT__KEYS_END};
    if (m->aft.variant != VIT_AFT_SIMPLE && m->aft.max_seqlen < 1)
        return vit__fail(VIT_ERR_FORMAT, "%s: metadata 'max_seqlen' = \"0\" is not an integer in 1..%d", vit__ld_src(L),
                         1 << 15);
    return m->aft.variant == VIT_AFT_LOCAL ? vit__read_keys(L, s_key, m) : VIT_OK;
}

static vit_result vit__aft_bind(vit__ld *L, vit_model *m, const void *names) {
    const vit__aft_naming *nm = (const vit__aft_naming *)names;
    const vit_aft_params *p = &m->aft;
    vit_aft_weights *w = &m->aft_w;
    char why[96];
    vit_result r;
    snprintf(why, sizeof why, "dim=%d, hidden_dim=%d, max_seqlen=%d", (int)p->dim, (int)p->hidden_dim,
             (int)p->max_seqlen);
    if ((r = vit__bind_linear(L, &w->q_w, &w->q_b, "", nm->q, p->hidden_dim, p->dim, why)) != VIT_OK ||
        (r = vit__bind_linear(L, &w->k_w, &w->k_b, "", nm->k, p->hidden_dim, p->dim, why)) != VIT_OK ||
        (r = vit__bind_linear(L, &w->v_w, &w->v_b, "", nm->v, p->hidden_dim, p->dim, why)) != VIT_OK ||
        (r = vit__bind_linear(L, &w->proj_w, &w->proj_b, "", nm->proj, p->dim, p->hidden_dim, why)) != VIT_OK)
        return r;
    if (p->variant != VIT_AFT_SIMPLE)
        return vit__bind(L, &w->wbias, nm->wbias, 2, p->max_seqlen, p->max_seqlen, 0, 0, why);
    return VIT_OK;
}

static vit_result vit__aft_run(const vit_model *m, vit_arena *a, const vit_tensor *x, const vit_forward_opts *o,
                               vit_tensor *out) {
    return vit_aft_forward(a, &m->aft, &m->aft_w, x, out, o ? o->attn : NULL);
}

static void vit__aft_describe(const vit_model *m, vit__buf *b) {
    const vit_aft_params *p = &m->aft;
    vit__bprintf(b, "  AFT-%s, dim %d, hidden %d",
                 p->variant == VIT_AFT_FULL     ? "full"
                 : p->variant == VIT_AFT_SIMPLE ? "simple"
                                                : "local",
                 (int)p->dim, (int)p->hidden_dim);
    if (p->variant == VIT_AFT_LOCAL) vit__bprintf(b, ", window s %d", (int)p->s);
    if (p->variant == VIT_AFT_SIMPLE) vit__bprintf(b, "\n  input (B, T, %d)\n", (int)p->dim);
    else vit__bprintf(b, "\n  input (B, T, %d), T <= max_seqlen %d\n", (int)p->dim, (int)p->max_seqlen);
}

static vit_result vit__aft_input(const vit_model *m, int32_t B, int32_t n, int32_t w, int32_t *ndim, int32_t *shape) {
    (void)w;
    if (m->aft.variant != VIT_AFT_SIMPLE && n > m->aft.max_seqlen) n = m->aft.max_seqlen;
    return vit__shape(ndim, shape, 3, B, n, m->aft.dim, 1);
}

/* ---- modules: outlook attention ---- */
/* "VOLO: Vision Outlooker for Visual Recognition" (Yuan et al. 2021), VOLO's
   and External-Attention-pytorch's OutlookAttention. Layout (B, H, W, C), channels last as VOLO. v =
   v(x); the attention comes from the input average-pooled with kernel =
   stride (ceil mode) to h x w = ceil(H/stride) x ceil(W/stride): attn(.)
   gives NH (K^2, K^2) logits per position, scaled and softmaxed row by row;
   each window of unfold(v) (kernel K, padding, stride) becomes att v, fold
   sums the windows back to H x W, and proj. Window l pairs with pooled
   position l, so the unfold must give h*w windows, as VOLO's reshape
   requires (kernel_size = 2*padding + 1 always does). Weights v.weight (C,
   C), v.bias (qkv_bias), attn.weight (NH*K^4, C), attn.bias, proj.weight (C,
   C), proj.bias. */

VITDEF vit_result vit_outlook_forward(vit_arena *a, const vit_outlook_params *p, const vit_outlook_weights *w,
                                      const vit_tensor *x, vit_tensor *out, vit_tensor *attn) {
    vit_tensor y, att, vv, pool, lg, f;
    vit_result r;
    int32_t B, H, W, C, NH, K, KK, P, S, h, wd, Lh, Lw, L, A;
    size_t mark, xb;
    void *xs;

    /* the params and the weights they ask for */
    if (!a || !p || !w || !out) return vit__fail(VIT_ERR_ARG, "outlook: NULL argument");
    C = p->dim; NH = p->heads; K = p->kernel_size; P = p->padding; S = p->stride;
    if (C < 1 || NH < 1 || K < 1 || K > 64 || P < 0 || P > 65536 || S < 1 || (p->qkv_bias && !w->v_b.data) ||
        !w->attn_b.data || !w->proj_b.data)
        return vit__fail(VIT_ERR_ARG,
                         "outlook: params or weights not set (kernel_size 1..64, padding 0..65536, stride >= 1)");
    if ((r = vit__ws_ok("outlook", 3, "v_w", &w->v_w, "attn_w", &w->attn_w, "proj_w", &w->proj_w)) != VIT_OK) return r;
    if (C % NH) return vit__fail(VIT_ERR_ARG, "outlook: dim %d is not a multiple of num_heads %d", (int)C, (int)NH);

    /* the input (B, H, W, C): unfold's windows must match the pooled grid, as in PyTorch */
    if ((r = vit__need4(x, "outlook", C, 1)) != VIT_OK) return r;
    B = x->shape[0]; H = x->shape[1]; W = x->shape[2];
    KK = K * K; A = NH * KK * KK;
    if ((double)H + 2.0 * P < K || (double)W + 2.0 * P < K)
        return vit__fail(VIT_ERR_SHAPE, "outlook: a %dx%d input with padding %d has no %dx%d window", (int)H, (int)W,
                         (int)P, (int)K, (int)K);
    h = (H - 1) / S + 1; wd = (W - 1) / S + 1;
    Lh = (H + 2 * P - K) / S + 1; Lw = (W + 2 * P - K) / S + 1; L = Lh * Lw;
    if ((double)Lh * Lw != (double)h * wd)
        return vit__fail(
            VIT_ERR_SHAPE,
            "outlook: unfold gives %dx%d windows on a %dx%d input but the pooled grid is %dx%d (kernel_size %d, "
            "padding %d, "
            "stride %d; PyTorch's reshape fails too); hint: kernel_size = 2*padding + 1",
            (int)Lh, (int)Lw, (int)H, (int)W, (int)h, (int)wd, (int)K, (int)P, (int)S);

    /* y and the maps asked for stay; everything after the mark is scratch */
    if ((r = vit__fits((double)B * H * W * C, B, "outlook")) != VIT_OK ||
        (r = vit__fits((double)B * L * A, B, "outlook attention")) != VIT_OK)
        return r;
    if ((r = vit_tensor_init(a, &y, 4, x->shape)) != VIT_OK) return r;
    if (attn && (r = vit__tensor4(a, &att, 4, B, NH, L, KK * KK)) != VIT_OK) return r;
    mark = vit_arena_mark(a);
    if (!attn && (r = vit__tensor4(a, &att, 4, B, NH, L, KK * KK)) != VIT_OK) return r;
    if ((r = vit_tensor_init(a, &vv, 4, x->shape)) != VIT_OK || (r = vit_tensor_init(a, &f, 4, x->shape)) != VIT_OK ||
        (r = vit__tensor4(a, &lg, 3, B, L, A, 1)) != VIT_OK)
        return r;
    if (S > 1 && (r = vit__tensor4(a, &pool, 4, B, h, wd, C)) != VIT_OK) return r;
    xb = vit__dense_scratch(vit__dense_scratch(vit__dense_scratch(0, &w->v_w, B * H * W, C), &w->attn_w, B * L, C),
                            &w->proj_w, B * H * W, C);
    if ((r = vit__scratch(a, xb, &xs)) != VIT_OK) return r;

    /* values, logits from the (pooled) input, the outlook core, the projection */
    if (!vit_arena_counting(a)) {
        vit__dense(vv.data, x->data, &w->v_w, p->qkv_bias ? w->v_b.data : NULL, B * H * W, C, C, xs);
        if (S > 1) vit_k_avgpool(pool.data, x->data, B, H, W, C, S); /* AvgPool2d(S, S, ceil_mode=True) */
        vit__dense(lg.data, S > 1 ? pool.data : x->data, &w->attn_w, w->attn_b.data, B * L, C, A, xs);
        vit_k_outlook(f.data, att.data, lg.data, vv.data, B, H, W, p);
        vit__dense(y.data, f.data, &w->proj_w, w->proj_b.data, B * H * W, C, C, xs);
    }

    /* the scratch back to the arena; y and the maps stay */
    vit_arena_rewind(a, mark);
    if (attn) *attn = att;
    *out = y;
    return VIT_OK;
}

/* The loader's hooks. */
typedef struct vit__outlook_naming { const char *naming, *v, *attn, *proj; } vit__outlook_naming;
static const vit__outlook_naming vit__outlook_names[] = {{"default", "v", "attn", "proj"}};

static const vit__key vit__outlook_keys[] = {VIT__INT("dim", 1, 1 << 20, outlook.dim),
                                             VIT__INT("num_heads", 1, 65536, outlook.heads),
                                             VIT__INT("kernel_size", 1, 64, outlook.kernel_size),
                                             VIT__INT("padding", 0, 64, outlook.padding),
                                             VIT__INT("stride", 1, 64, outlook.stride),
                                             VIT__INT("qkv_bias", 0, 1, outlook.qkv_bias),
                                             VIT__REAL("scale", -1e30, 1e30, outlook.scale),
                                             VIT__KEYS_END};

static vit_result vit__outlook_check(vit_model *m, vit__ld *L) {
    const vit_outlook_params *p = &m->outlook;
    if (p->dim % p->heads)
        return vit__fail(VIT_ERR_FORMAT, "%s: dim %d is not a multiple of num_heads %d", vit__ld_src(L), (int)p->dim,
                         (int)p->heads);
    if ((double)p->heads * p->kernel_size * p->kernel_size * p->kernel_size * p->kernel_size > (double)(1 << 24))
        return vit__fail(VIT_ERR_UNSUPPORTED, "%s: num_heads * kernel_size^4 is more than vit.h supports",
                         vit__ld_src(L));
    return VIT_OK;
}

static vit_result vit__outlook_bind(vit__ld *L, vit_model *m, const void *names) {
    const vit__outlook_naming *nm = (const vit__outlook_naming *)names;
    const vit_outlook_params *p = &m->outlook;
    vit_outlook_weights *w = &m->outlook_w;
    int32_t C = p->dim, KK = p->kernel_size * p->kernel_size;
    char why[96], n[256];
    vit_result r;
    snprintf(why, sizeof why, "dim=%d, num_heads=%d, kernel_size=%d, qkv_bias=%d", (int)C, (int)p->heads,
             (int)p->kernel_size, (int)p->qkv_bias);
    snprintf(n, sizeof n, "%s.weight", nm->v);
    if ((r = vit__bind_dense(L, &w->v_w, n, C, C, why)) != VIT_OK) return r;
    snprintf(n, sizeof n, "%s.bias", nm->v);
    if (p->qkv_bias && (r = vit__bind(L, &w->v_b, n, 1, C, 0, 0, 0, why)) != VIT_OK) return r;
    if ((r = vit__bind_linear(L, &w->attn_w, &w->attn_b, "", nm->attn, p->heads * KK * KK, C, why)) != VIT_OK) return r;
    return vit__bind_linear(L, &w->proj_w, &w->proj_b, "", nm->proj, C, C, why);
}

static vit_result vit__outlook_run(const vit_model *m, vit_arena *a, const vit_tensor *x, const vit_forward_opts *o,
                                   vit_tensor *out) {
    return vit_outlook_forward(a, &m->outlook, &m->outlook_w, x, out, o ? o->attn : NULL);
}

static void vit__outlook_describe(const vit_model *m, vit__buf *b) {
    const vit_outlook_params *p = &m->outlook;
    vit__bprintf(b, "  %d heads, %dx%d windows, padding %d, stride %d, scale %g%s\n  input (B, H, W, %d)\n",
                 (int)p->heads, (int)p->kernel_size, (int)p->kernel_size, (int)p->padding, (int)p->stride,
                 (double)p->scale, p->qkv_bias ? ", v with bias" : "", (int)p->dim);
}

static vit_result vit__outlook_input(const vit_model *m, int32_t B, int32_t n, int32_t w, int32_t *ndim,
                                     int32_t *shape) {
    return vit__shape(ndim, shape, 4, B, n, w, m->outlook.dim);
}

/* ---- model: safetensors reader ---- */
/* A small, bounded JSON reader for the safetensors header (and a
   checkpoint's config.json). It never reads past `end`, limits nesting,
   and copies every string it keeps into a temporary arena sized from the
   header length (each entry needs more header bytes than it takes memory),
   so no input can make it allocate more than a fixed multiple of the
   header. */

enum { VIT__F32 = 0, VIT__F16, VIT__BF16, VIT__I8, VIT__OTHER };

typedef struct vit__entry {
    const char *name;
    char dtype_name[12];
    int dtype;           /* VIT__F32 ... */
    int esize;           /* bytes per element */
    int ndim;
    int64_t shape[8];
    uint64_t begin, end; /* relative to the data section */
    int used;
    int roles;           /* bound as a dense layer's weight (1), as anything else (2) */
    int order;           /* position in the header */
    const struct vit__pack *pack; /* its bytes were packed in place (vit__pack_weight): how */
} vit__entry;

/* A metadata key and its value. */
typedef struct vit__kv { const char *k, *v; } vit__kv;

typedef struct vit__st {
    const char *src;           /* file name for messages */
    const unsigned char *data; /* data section */
    uint64_t data_size;
    vit__entry *e;             /* n tensors, in data order */
    vit__entry **by_name;      /* the same n, by name (binary search) */
    int n, cap;
    const char **mk, **mv;     /* metadata keys and values, in file order */
    vit__kv *meta_by_key;      /* the same nmeta pairs, by key */
    int nmeta, capmeta;
    vit_arena tmp;
} vit__st;

/* Names are compared through this, so tests can count the comparisons
   (lookups must stay O(log n): a header of many decoy tensors must not
   make loading quadratic). */
#ifndef VIT__NAME_CMP
#define VIT__NAME_CMP(a, b) strcmp((a), (b))
#endif

typedef struct vit__json {
    const char *p, *end;
    vit__st *st;
} vit__json;

static void vit__json_ws(vit__json *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

static int vit__json_eat(vit__json *j, char c) {
    vit__json_ws(j);
    if (j->p < j->end && *j->p == c) { j->p++; return 1; }
    return 0;
}

/* A string into the temporary arena (escapes decoded; \u above 0x7f kept as
   UTF-8). 0 on error. */
static int vit__json_str(vit__json *j, const char **out) {
    const char *q;
    char *dst;
    size_t n = 0;
    *out = NULL;

    /* find the closing quote first, so the decoded string gets one allocation */
    if (!vit__json_eat(j, '"')) return 0;
    for (q = j->p; q < j->end && *q != '"'; q++)
        if (*q == '\\' && ++q == j->end) return 0;
    if (q >= j->end) return 0;
    dst = (char *)vit_arena_alloc(&j->st->tmp, (size_t)(q - j->p) + 1);
    if (!dst) return 0;

    /* decode the escapes */
    while (j->p < q) {
        char c = *j->p++;
        if ((unsigned char)c < 0x20) return 0;
        if (c == '\\') {
            c = *j->p++;
            switch (c) {
            case '"': case '\\': case '/': dst[n++] = c; break;
            case 'b': dst[n++] = '\b'; break;
            case 'f': dst[n++] = '\f'; break;
            case 'n': dst[n++] = '\n'; break;
            case 'r': dst[n++] = '\r'; break;
            case 't': dst[n++] = '\t'; break;
            case 'u': {
                unsigned v = 0;
                int i;
                if (q - j->p < 4) return 0;
                for (i = 0; i < 4; i++) {
                    char h = *j->p++;
                    v = v * 16 + (unsigned)(h >= '0' && h <= '9'   ? h - '0'
                                            : h >= 'a' && h <= 'f' ? h - 'a' + 10
                                            : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                                                   : 99);
                    if (v > 0xffff) return 0;
                }
                if (v == 0) return 0; /* would truncate the name */
                /* \uXXXX (6 bytes) decodes to at most 3, so dst cannot overflow. */
                if (v < 0x80) dst[n++] = (char)v;
                else if (v < 0x800) { dst[n++] = (char)(0xc0 | (v >> 6)); dst[n++] = (char)(0x80 | (v & 63));
                } else {
                    dst[n++] = (char)(0xe0 | (v >> 12));
                    dst[n++] = (char)(0x80 | ((v >> 6) & 63));
                    dst[n++] = (char)(0x80 | (v & 63));
                }
                break;
            }
            default: return 0;
            }
        } else dst[n++] = c;
    }

    dst[n] = 0;
    j->p = q + 1;
    *out = dst;
    return 1;
}

static int vit__json_uint(vit__json *j, uint64_t *v) {
    int digits = 0;
    vit__json_ws(j);
    *v = 0;
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
        unsigned d = (unsigned)(*j->p++ - '0');
        if (*v > (UINT64_MAX - d) / 10) return 0;
        *v = *v * 10 + d;
        digits++;
    }
    return digits > 0;
}

/* Skips any JSON value; depth-limited so hostile nesting cannot recurse far. */
static int vit__json_skip(vit__json *j, int depth) {
    const char *s;
    if (depth > 32) return 0;
    vit__json_ws(j);
    if (j->p >= j->end) return 0;
    if (*j->p == '"') {
        j->p++;
        while (j->p < j->end && *j->p != '"')
            if (*j->p++ == '\\' && j->p++ == j->end) return 0;
        if (j->p >= j->end) return 0;
        j->p++;
        return 1;
    }
    if (*j->p == '{' || *j->p == '[') {
        char close = *j->p == '{' ? '}' : ']';
        int obj = *j->p == '{';
        j->p++;
        if (vit__json_eat(j, close)) return 1;
        do {
            if (obj) {
                const char *k;
                size_t mark = vit_arena_mark(&j->st->tmp);
                if (!vit__json_str(j, &k) || !vit__json_eat(j, ':')) return 0;
                vit_arena_rewind(&j->st->tmp, mark);
            }
            if (!vit__json_skip(j, depth + 1)) return 0;
        } while (vit__json_eat(j, ','));
        return vit__json_eat(j, close);
    }
    s = j->p;
    while (j->p < j->end && (*j->p == '+' || *j->p == '-' || *j->p == '.' || (*j->p >= '0' && *j->p <= '9') ||
                             (*j->p >= 'a' && *j->p <= 'z') || *j->p == 'E'))
        j->p++;
    return j->p > s;
}

/* A JSON number (at most 63 characters) as a finite double. */
static int vit__json_num(vit__json *j, double *v) {
    char buf[64], *end;
    size_t n = 0;
    vit__json_ws(j);
    while (j->p < j->end && n < sizeof buf - 1 &&
           (*j->p == '-' || *j->p == '+' || *j->p == '.' || *j->p == 'e' || *j->p == 'E' ||
            (*j->p >= '0' && *j->p <= '9')))
        buf[n++] = *j->p++;
    buf[n] = 0;
    if (!n) return 0;
    *v = strtod(buf, &end);
    return *end == 0 && *v == *v && *v - *v == 0.0; /* no NaN, no infinity */
}

/* Consumes the literal w (true, false, null) if it comes next. */
static int vit__json_word(vit__json *j, const char *w) {
    size_t n = strlen(w);
    vit__json_ws(j);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n)) return 0;
    j->p += n;
    return 1;
}

static int vit__dtype(const char *s, int *esize) {
    static const struct { const char *n; int code, size; } t[] = {
        {"F32", VIT__F32, 4}, {"F16", VIT__F16, 2}, {"BF16", VIT__BF16, 2}, {"F64", VIT__OTHER, 8},
        {"I64", VIT__OTHER, 8}, {"I32", VIT__OTHER, 4}, {"I16", VIT__OTHER, 2}, {"I8", VIT__I8, 1},
        {"U8", VIT__OTHER, 1}, {"U16", VIT__OTHER, 2}, {"U32", VIT__OTHER, 4}, {"U64", VIT__OTHER, 8},
        {"BOOL", VIT__OTHER, 1}, {"F8_E4M3", VIT__OTHER, 1}, {"F8_E5M2", VIT__OTHER, 1}};
    size_t i;
    for (i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(s, t[i].n)) { *esize = t[i].size; return t[i].code; }
    return -1;
}

static vit_result vit__st_entry(vit__json *j, const char *name) {
    vit__st *st = j->st;
    vit__entry *e;
    int have_dtype = 0, have_shape = 0, have_off = 0;

    /* a new entry, while the header's size allows */
    if (st->n >= st->cap) return vit__fail(VIT_ERR_FORMAT, "%s: too many tensors for the header size", st->src);
    e = &st->e[st->n];
    memset(e, 0, sizeof *e);
    e->name = name;
    e->order = st->n;
    if (!vit__json_eat(j, '{')) return vit__fail(VIT_ERR_FORMAT, "%s: tensor '%s': expected an object", st->src, name);

    /* its keys, each once: dtype, shape, data_offsets; others skipped */
    if (!vit__json_eat(j, '}')) {
        do {
            const char *k, *d;
            uint64_t v;
            size_t mark = vit_arena_mark(&st->tmp); /* keys and dtype are not kept */
            if (!vit__json_str(j, &k) || !vit__json_eat(j, ':'))
                return vit__fail(VIT_ERR_FORMAT, "%s: tensor '%s': bad JSON", st->src, name);
            if ((!strcmp(k, "dtype") && have_dtype) || (!strcmp(k, "shape") && have_shape) ||
                (!strcmp(k, "data_offsets") && have_off))
                return vit__fail(VIT_ERR_FORMAT, "%s: tensor '%s': key '%s' appears twice", st->src, name, k);
            if (!strcmp(k, "dtype")) {
                if (!vit__json_str(j, &d) || (e->dtype = vit__dtype(d, &e->esize)) < 0)
                    return vit__fail(VIT_ERR_DTYPE, "%s: tensor '%s': unknown dtype", st->src, name);
                snprintf(e->dtype_name, sizeof e->dtype_name, "%s", d);
                have_dtype = 1;
            } else if (!strcmp(k, "shape")) {
                if (!vit__json_eat(j, '['))
                    return vit__fail(VIT_ERR_FORMAT, "%s: tensor '%s': shape is not a list", st->src, name);
                if (!vit__json_eat(j, ']')) {
                    do {
                        if (e->ndim >= 8 || !vit__json_uint(j, &v) || v > INT32_MAX)
                            return vit__fail(VIT_ERR_FORMAT, "%s: tensor '%s': bad shape", st->src, name);
                        e->shape[e->ndim++] = (int64_t)v;
                    } while (vit__json_eat(j, ','));
                    if (!vit__json_eat(j, ']'))
                        return vit__fail(VIT_ERR_FORMAT, "%s: tensor '%s': bad shape", st->src, name);
                }
                have_shape = 1;
            } else if (!strcmp(k, "data_offsets")) {
                if (!vit__json_eat(j, '[') || !vit__json_uint(j, &e->begin) || !vit__json_eat(j, ',') ||
                    !vit__json_uint(j, &e->end) || !vit__json_eat(j, ']'))
                    return vit__fail(VIT_ERR_FORMAT, "%s: tensor '%s': bad data_offsets", st->src, name);
                have_off = 1;
            } else if (!vit__json_skip(j, 0))
                return vit__fail(VIT_ERR_FORMAT, "%s: tensor '%s': bad JSON", st->src, name);
            vit_arena_rewind(&st->tmp, mark);
        } while (vit__json_eat(j, ','));
        if (!vit__json_eat(j, '}')) return vit__fail(VIT_ERR_FORMAT, "%s: tensor '%s': bad JSON", st->src, name);
    }

    if (!have_dtype || !have_shape || !have_off)
        return vit__fail(VIT_ERR_FORMAT, "%s: tensor '%s' lacks dtype, shape or data_offsets", st->src, name);
    st->n++;
    return VIT_OK;
}

/* By data offset; a zero-size tensor before one starting where it is;
   then in header order, so that every qsort gives the same order. */
static int vit__entry_cmp(const void *a, const void *b) {
    const vit__entry *x = (const vit__entry *)a, *y = (const vit__entry *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

static int vit__name_cmp(const void *a, const void *b) {
    return VIT__NAME_CMP((*(vit__entry *const *)a)->name, (*(vit__entry *const *)b)->name);
}

static int vit__key_cmp(const void *a, const void *b) {
    return VIT__NAME_CMP(((const vit__kv *)a)->k, ((const vit__kv *)b)->k);
}

/* The tensor called `name`, or NULL: a binary search of st->by_name. */
static vit__entry *vit__entry_find(const vit__st *st, const char *name) {
    int lo = 0, hi = st->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2, c = VIT__NAME_CMP(st->by_name[mid]->name, name);
        if (!c) return st->by_name[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* Parses the header of buf (size bytes) into st; st->tmp owns the strings. */
static vit_result vit__st_parse(vit__st *st, const unsigned char *buf, size_t size) {
    uint64_t hlen = 0;
    size_t cap_bytes, i;
    vit__json j;
    vit_result r;
    int k;
    int have_meta = 0;

    /* 8 bytes of header length, then the JSON header, which must start with '{' */
    if (size < 10 || buf[8] != '{')
        return vit__fail(VIT_ERR_FORMAT, "%s: not a safetensors file (no JSON header after its first 8 bytes)",
                         st->src);
    for (k = 7; k >= 0; k--) hlen = hlen << 8 | buf[k];
    if (hlen > ((uint64_t)1 << 30))
        return vit__fail(VIT_ERR_FORMAT,
                         "%s: not a safetensors file (its first 8 bytes give a header length past 1 GiB)", st->src);
    if (hlen < 2 || hlen > size - 8)
        return vit__fail(VIT_ERR_FORMAT, "%s: header of %llu bytes does not fit in the %zu-byte file (truncated?)",
                         st->src, (unsigned long long)hlen, size);

    /* where the data starts, and how many tensors and keys a header of this size can hold */
    st->data = buf + 8 + hlen;
    st->data_size = size - 8 - hlen;
    st->cap = (int)(hlen / 24) + 1;
    st->capmeta = (int)(hlen / 6) + 1;

    /* A kept string takes at most its length + VIT_ALIGN; a string needs at
       least 2.5 header bytes ("":"" pairs), so 32 bytes a header byte suffice. */
    cap_bytes = (size_t)hlen * 32 + 4096 + (size_t)st->cap * (sizeof(vit__entry) + sizeof(vit__entry *)) +
                (size_t)st->capmeta * (2 * sizeof(char *) + sizeof(vit__kv)) + 6 * VIT_ALIGN;
    if ((r = vit_arena_init_alloc(&st->tmp, cap_bytes)) != VIT_OK) return r;
    st->e = (vit__entry *)vit_arena_alloc(&st->tmp, (size_t)st->cap * sizeof(vit__entry));
    st->by_name = (vit__entry **)vit_arena_alloc(&st->tmp, (size_t)st->cap * sizeof(vit__entry *));
    st->mk = (const char **)vit_arena_alloc(&st->tmp, (size_t)st->capmeta * sizeof(char *));
    st->mv = (const char **)vit_arena_alloc(&st->tmp, (size_t)st->capmeta * sizeof(char *));
    st->meta_by_key = (vit__kv *)vit_arena_alloc(&st->tmp, (size_t)st->capmeta * sizeof(vit__kv));
    if (!st->e || !st->by_name || !st->mk || !st->mv || !st->meta_by_key) return VIT_ERR_OOM;

    /* the header object: one entry per tensor, and __metadata__ */
    j.p = (const char *)buf + 8;
    j.end = j.p + hlen;
    j.st = st;
    j.p++; /* the '{' checked above: the format says the header starts with it */
    if (!vit__json_eat(&j, '}')) {
        do {
            const char *name;
            if (!vit__json_str(&j, &name) || !vit__json_eat(&j, ':'))
                return vit__fail(VIT_ERR_FORMAT, "%s: bad JSON in the header near byte %ld", st->src,
                                 (long)(j.p - (const char *)buf));
            if (!strcmp(name, "__metadata__")) {
                /* Python's json would merge a second one, key by key */
                if (have_meta++)
                    return vit__fail(VIT_ERR_FORMAT, "%s: the header has two __metadata__ objects", st->src);
                if (!vit__json_eat(&j, '{'))
                    return vit__fail(VIT_ERR_FORMAT, "%s: __metadata__ is not an object", st->src);
                if (!vit__json_eat(&j, '}')) {
                    do {
                        if (st->nmeta >= st->capmeta || !vit__json_str(&j, &st->mk[st->nmeta]) ||
                            !vit__json_eat(&j, ':') || !vit__json_str(&j, &st->mv[st->nmeta]))
                            return vit__fail(VIT_ERR_FORMAT, "%s: __metadata__ must map strings to strings", st->src);
                        st->nmeta++;
                    } while (vit__json_eat(&j, ','));
                    if (!vit__json_eat(&j, '}'))
                        return vit__fail(VIT_ERR_FORMAT, "%s: bad JSON in __metadata__", st->src);
                }
            } else if ((r = vit__st_entry(&j, name)) != VIT_OK) return r;
        } while (vit__json_eat(&j, ','));
        if (!vit__json_eat(&j, '}'))
            return vit__fail(VIT_ERR_FORMAT, "%s: bad JSON in the header near byte %ld", st->src,
                             (long)(j.p - (const char *)buf));
    }

    vit__json_ws(&j);
    if (j.p != j.end) return vit__fail(VIT_ERR_FORMAT, "%s: trailing bytes after the JSON header", st->src);

    /* Every tensor's bytes must match its shape, lie inside the data
       section, and not overlap another's. */
    for (i = 0; i < (size_t)st->n; i++) {
        vit__entry *e = &st->e[i];
        size_t numel = 1, bytes;
        int d;
        for (d = 0; d < e->ndim; d++)
            if (!vit__mul_ok(numel, (size_t)e->shape[d], &numel))
                return vit__fail(VIT_ERR_OVERFLOW, "%s: tensor '%s': element count overflows", st->src, e->name);
        if (!vit__mul_ok(numel, (size_t)e->esize, &bytes))
            return vit__fail(VIT_ERR_OVERFLOW, "%s: tensor '%s': byte size overflows", st->src, e->name);
        if (e->end < e->begin)
            return vit__fail(VIT_ERR_FORMAT, "%s: tensor '%s': data_offsets [%llu,%llu] end before they begin", st->src,
                             e->name, (unsigned long long)e->begin, (unsigned long long)e->end);
        if (e->end - e->begin != (uint64_t)bytes)
            return vit__fail(VIT_ERR_FORMAT,
                             "%s: tensor '%s': data_offsets [%llu,%llu] hold %llu bytes, its shape needs %zu", st->src,
                             e->name, (unsigned long long)e->begin, (unsigned long long)e->end,
                             (unsigned long long)(e->end - e->begin), bytes);
        if (e->end > st->data_size)
            return vit__fail(VIT_ERR_FORMAT,
                             "%s: tensor '%s' ends at byte %llu of a %llu-byte data section (truncated file?)", st->src,
                             e->name, (unsigned long long)e->end, (unsigned long long)st->data_size);
    }

    /* entries in file order, for the overlap check at the end */
    if (st->n > 1) qsort(st->e, (size_t)st->n, sizeof(vit__entry), vit__entry_cmp);

    /* Indexes by name and key, for O(log n) lookups; duplicates, which
       Python's json would resolve to the last, are refused. */
    for (k = 0; k < st->n; k++) st->by_name[k] = &st->e[k];
    if (st->n > 1) qsort(st->by_name, (size_t)st->n, sizeof(vit__entry *), vit__name_cmp);
    for (k = 1; k < st->n; k++)
        if (!VIT__NAME_CMP(st->by_name[k]->name, st->by_name[k - 1]->name))
            return vit__fail(VIT_ERR_FORMAT, "%s: tensor name '%s' appears twice in the header", st->src,
                             st->by_name[k]->name);
    for (k = 0; k < st->nmeta; k++) { st->meta_by_key[k].k = st->mk[k]; st->meta_by_key[k].v = st->mv[k]; }
    if (st->nmeta > 1) qsort(st->meta_by_key, (size_t)st->nmeta, sizeof(vit__kv), vit__key_cmp);
    for (k = 1; k < st->nmeta; k++)
        if (!VIT__NAME_CMP(st->meta_by_key[k].k, st->meta_by_key[k - 1].k))
            return vit__fail(VIT_ERR_FORMAT, "%s: __metadata__ has the key '%s' twice", st->src, st->meta_by_key[k].k);

    /* in file order, each tensor ends before the next begins */
    for (k = 1; k < st->n; k++)
        if (st->e[k].begin < st->e[k - 1].end)
            return vit__fail(VIT_ERR_FORMAT, "%s: tensors '%s' and '%s' overlap", st->src, st->e[k - 1].name,
                             st->e[k].name);
    return VIT_OK;
}

static const char *vit__meta(const vit__st *st, const char *key) {
    int lo = 0, hi = st->nmeta;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2, c = VIT__NAME_CMP(st->meta_by_key[mid].k, key);
        if (!c) return st->meta_by_key[mid].v;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* ---- model: binding tensors by name ---- */
/* Each naming scheme is a few strings; binding checks every tensor's
   presence, shape and dtype, and the loader refuses leftovers, so a file
   either matches its declared config exactly or is refused with the name
   of the first tensor that does not fit. */

/* Every table row starts with its naming string. */
static const void *vit__find_naming(const void *tab, size_t stride, size_t n, const char *naming) {
    size_t i;
    for (i = 0; i < n; i++) {
        const char *const *p = (const char *const *)(const void *)((const char *)tab + i * stride);
        if (!strcmp(*p, naming)) return p;
    }
    return NULL;
}

struct vit__ld {
    vit__st st;
    vit_model *m;
    char pfx[24];             /* before every ViT name but the head's: "vit.", "data2vec_vision." or "" */
    const char *norm;         /* the final LayerNorm's name when not the naming's first */
    const char **labels;      /* n_labels class names for m->labels (temporary storage) */
    int32_t n_labels;
    const char *xk[9], *xv[9]; /* metadata derived from a config.json, after the file's */
    char xbuf[2][24];         /* text of those that are numbers */
    int32_t nx;
    char inferred[320];       /* m->inferred, when the config was inferred */
    int allow_nonfinite;      /* vit_load_opts.allow_nonfinite */
    int dense;                /* 1 while binding a dense layer's weight: BF16 and I8 stay as they are (4-D: a
                                 patch embedding's conv, vit__bind_conv, bound as the (d0, d1 d2 d3) matrix) */
    int linear;               /* 1 while binding a linear layer's weight that is widened (views of it): I8 allowed */
    int writable;             /* 1: the file's bytes are the loader's to change (a private mapping, a copy) */
    int act_bits;             /* the I8 weights' act_bits: the file's activation_bits, 8 or 7 */
    vit_arena pack;           /* vit__ld_pack's room for one panel */
};

static void vit__half_to_f32(float *dst, const unsigned char *src, size_t n, int bf16) {
    size_t i;
    for (i = 0; i < n; i++) {
        uint32_t h = (uint32_t)src[2 * i] | (uint32_t)src[2 * i + 1] << 8, f;
        if (bf16) f = h << 16;
        else {
            uint32_t sign = (h & 0x8000u) << 16, ex = (h >> 10) & 31, man = h & 1023;
            if (ex == 31) f = sign | 0x7f800000u | man << 13;      /* inf, nan */
            else if (ex) f = sign | (ex + 112) << 23 | man << 13; /* normal */
            else if (!man) f = sign;                               /* zero */
            else {                                                 /* subnormal: renormalise */
                ex = 113;
                while (!(man & 1024)) { man <<= 1; ex--; }
                f = sign | ex << 23 | (man & 1023) << 13;
            }
        }
        memcpy(dst + i, &f, 4);
    }
}

static void vit__shape_text(char *buf, size_t n, int ndim, const int64_t *shape) {
    size_t u = 0;
    int i;
    u += (size_t)snprintf(buf, n, "[");
    for (i = 0; i < ndim && u < n; i++)
        u += (size_t)snprintf(buf + u, n - u, i ? ",%lld" : "%lld", (long long)shape[i]);
    if (u < n) snprintf(buf + u, n - u, "]");
}

/* Where a scan of n values of `bits` bits (8 or 16) at src must go on one value at a time: the first value of the
   first block of 4,096 holding a value v with (v & mask) == want, or n rounded down to whole 64-bit words. The
   words are read little-endian (the hosts vit.h runs on), mask and want repeated in each lane; a lane of
   (w & mask) ^ want is zero for such a value, and a lane's top bit survives both the subtraction of ones and ~
   only from a zero lane or above one (a borrow), so the test is exact for "any". Branch-free within a block: GCC's
   -O2 vectorises no byte loop, and the BF16 finiteness check, one value at a time, took 70 ms of ViT-B/16 BF16's
   0.17 s load. */
static size_t vit__scan_words(const unsigned char *src, size_t n, int bits, uint64_t mask, uint64_t want) {
    uint64_t ones = bits == 8 ? UINT64_C(0x0101010101010101) : UINT64_C(0x0001000100010001), w, bad;
    size_t per = (size_t)(64 / bits), whole = n / per * per, i, j, e;
    for (i = 0; i < whole; i = e) {
        e = whole - i < 4096 ? whole : i + 4096;
        for (bad = 0, j = i; j < e; j += per) {
            memcpy(&w, src + j * (size_t)(bits / 8), 8);
            w = (w & mask) ^ want;
            bad |= (w - ones) & ~w & ones << (bits - 1);
        }
        if (bad) break;
    }
    return i;
}

/* Index of the first NaN or Inf among the n values of dtype at src, or n. */
static size_t vit__first_nonfinite(const unsigned char *src, size_t n, int dtype) {
    size_t i;
    uint32_t exp;
    if (dtype == VIT__I8) return n; /* integers; their scales are checked with them */
    if (dtype == VIT__F32) {
        if ((uintptr_t)src % sizeof(float) == 0 && vit__all_finite((const float *)(const void *)src, n)) return n;
        for (i = 0; i < n; i++) {
            uint32_t u;
            memcpy(&u, src + 4 * i, 4);
            if ((u & 0x7f800000u) == 0x7f800000u) return i;
        }
        return n;
    }
    exp = dtype == VIT__BF16 ? 0x7f80u : 0x7c00u; /* F16, BF16: the exponent all ones */
    i = vit__scan_words(src, n, 16, exp * UINT64_C(0x0001000100010001), exp * UINT64_C(0x0001000100010001));
    for (; i < n; i++)
        if ((((uint32_t)src[2 * i] | (uint32_t)src[2 * i + 1] << 8) & exp) == exp) return i;
    return n;
}

/* Index of the first -128 among n I8 values, or n. The format's values are
   symmetric, -127..127, and the AVX2 product negates them (vpsignb). */
static size_t vit__first_i8_min(const unsigned char *src, size_t n) {
    size_t i = vit__scan_words(src, n, 8, ~UINT64_C(0), UINT64_C(0x8080808080808080));
    for (; i < n; i++)
        if (src[i] == 0x80) return i;
    return n;
}

/* The pages of n bytes at p made writable and the process's own at once, before they are rewritten: where p
   lies in a file's private mapping, each page's first write is otherwise a fault that copies it (a third of
   loading a file that packs its weights: ViT-B/16 f32 0.30-0.40 -> 0.18-0.26 s). Advice only: no effect where
   the kernel or the build has no MADV_POPULATE_WRITE. */
static void vit__populate(const void *p, size_t n) {
#ifdef VIT__POPULATE_WRITE
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)p, lo, hi;
    if (page <= 0 || !n) return;
    lo = a / (uintptr_t)page * (uintptr_t)page;
    hi = (a + n + (uintptr_t)page - 1) / (uintptr_t)page * (uintptr_t)page;
    (void)madvise((void *)lo, (size_t)(hi - lo), VIT__POPULATE_WRITE);
#else
    (void)p; (void)n;
#endif
}

/* Entry e's n values refused when one is NaN or Inf, unless vit_load_opts allows them; I8, when one is -128. */
static vit_result vit__ld_values(const vit__ld *L, const vit__entry *e, size_t n) {
    size_t k;
    if (e->dtype == VIT__I8 && (k = vit__first_i8_min(L->st.data + e->begin, n)) < n)
        return vit__fail(VIT_ERR_FORMAT, "%s: I8 tensor '%s' holds -128 (element %zu); I8 values are -127..127",
                         L->st.src, e->name, k);
    if (L->allow_nonfinite || (k = vit__first_nonfinite(L->st.data + e->begin, n, e->dtype)) >= n) return VIT_OK;
    return vit__fail(VIT_ERR_NONFINITE,
                     "%s: tensor '%s' holds a NaN or Inf (element %zu); vit.h refuses non-finite weights "
                     "(vit_load_opts.allow_nonfinite = 1 loads them)",
                     L->st.src, e->name, k);
}

/* Packs a kept BF16 or I8 weight for the products (vit__pack_weight) when
   its bytes are ours to change (ours: a file's private mapping or buffer,
   a copy in the arena); the bytes that memory loads are given stay as
   they are. Not while counting. check: the file entry whose values are
   checked (vit__ld_values) after the count: once the pages are ours,
   before the packing reads them, or as they lie when not packed; or
   NULL. */
static vit_result vit__ld_pack_check(vit__ld *L, vit_tensor *t, int ours, const vit__entry *check) {
    size_t need = vit__pack_tmp(t), nsums = vit__pack_sums(t);
    int32_t *sums = NULL;
    struct vit__pack *rec;
    vit_result r;
    if (!need || !ours) /* it stays as it lies: its values checked so, after the count */
        return check && !vit_arena_counting(&L->m->arena) ? vit__ld_values(L, check, vit_tensor_numel(t)) : VIT_OK;
    if (!(rec = (struct vit__pack *)vit_arena_alloc(&L->m->arena, sizeof *rec))) return VIT_ERR_OOM;
    if (nsums && !(sums = (int32_t *)vit_arena_alloc(&L->m->arena, nsums * sizeof(int32_t)))) return VIT_ERR_OOM;
    if (vit_arena_counting(&L->m->arena)) return VIT_OK;
    if (need > L->pack.size) {
        vit_arena_free(&L->pack);
        if ((r = vit_arena_init_alloc(&L->pack, need)) != VIT_OK) return r;
    }
    vit__populate(t->dtype == VIT_DTYPE_F32 ? (const void *)t->data : t->q,
                  vit_tensor_numel(t) * (size_t)vit__dtype_bytes(t->dtype));
    if (check && (r = vit__ld_values(L, check, vit_tensor_numel(t))) != VIT_OK) return r;
    vit__pack_weight(t, L->pack.base, sums, rec);
    return VIT_OK;
}

static vit_result vit__ld_pack(vit__ld *L, vit_tensor *t, int ours) { return vit__ld_pack_check(L, t, ours, NULL); }

/* vit__ld_pack for a weight bound from file entry e; in_place: t's bytes
   are e's own, so a second bind of the same tensor finds them packed
   already (e->pack) and must not pack them again. Its values are checked
   by vit__ld_pack_check (vit__bind and vit__bind_low leave them), after
   the counting pass, whether it is packed or not, so that a file with
   faults in several places gets the same first refusal from a file as
   from memory (fuzz_quant): once its pages are ours, before it is packed
   (read then, they come from memory once: the count's reading had mapped
   the file's pages, each then replaced by its copy with a TLB flush, and
   ViT-B/16 loaded in 0.24-0.27 s F32, 0.09-0.11 s I8, where it now takes
   0.19-0.21 and 0.055-0.06 s); else as they lie. */
static vit_result vit__ld_pack_entry(vit__ld *L, vit_tensor *t, vit__entry *e, int in_place, int ours) {
    vit_result r;
    if (in_place && e->pack) { /* bound before: checked then */
        t->pack = e->pack;
        return VIT_OK;
    }
    if ((r = vit__ld_pack_check(L, t, ours, e)) != VIT_OK) return r;
    if (in_place) e->pack = t->pack;
    return VIT_OK;
}

/* A BF16 or I8 tensor e (its data at src), dst's shape set. A dense
   layer's weight (and a patch embedding's kernel: vit__bind_conv) stays
   BF16 or I8 (in place when aligned), anything else
   BF16 is widened to F32. I8 is for dense layers' weights only (what the
   exporter writes: a class token or a norm quantised per row is not a
   format vit.h defines), and needs its scales: F32 tensor '<name>_scale',
   one per row (shape[0]), > 0 and at most FLT_MAX / 127 so that every
   scale * q is a finite float, values -127..127, and at most 65536 inputs
   (its int32 sums stay exact). */
#define VIT__I8_SCALE_MAX (FLT_MAX / 127.0f) /* the largest I8 row scale: scale * q stays finite */
static vit_result vit__bind_low(vit__ld *L, vit_tensor *dst, vit__entry *e, const unsigned char *src) {
    vit__st *st = &L->st;
    vit_arena *a = &L->m->arena;
    size_t numel = vit_tensor_numel(dst), row, i;
    int32_t rows = dst->shape[0];
    const float *scale = NULL;
    float *sc;
    vit_result r;

    /* I8: a dense layer's weight, with its per-row scales from '<name>_scale', aligned, positive, scale * 127 finite */
    if (e->dtype == VIT__I8) {
        char sn[300];
        vit__entry *s;
        if (!L->dense && !L->linear)
            return vit__fail(VIT_ERR_DTYPE,
                             "%s: tensor '%s' is I8, but only dense layers' weight matrices and the patch "
                             "embedding's kernel may be I8 (this one is read as F32, F16 or BF16; hint: re-export "
                             "with tools/export.py --dtype I8)",
                             st->src, e->name);
        snprintf(sn, sizeof sn, "%s_scale", e->name);
        if (!(s = (vit__entry *)(uintptr_t)vit__entry_find(st, sn)))
            return vit__fail(VIT_ERR_MISSING, "%s: I8 tensor '%s' has no scale tensor '%s'", st->src, e->name, sn);
        if (s->dtype != VIT__F32 || s->ndim != 1 || s->shape[0] != rows)
            return vit__fail(VIT_ERR_FORMAT, "%s: scale tensor '%s' must be F32 of shape [%d]", st->src, sn, (int)rows);
        s->used = 1;
        scale = (const float *)(const void *)(st->data + s->begin);
        if ((uintptr_t)scale % sizeof(float)) {
            if (!(sc = (float *)vit_arena_alloc(a, (size_t)rows * sizeof(float)))) return VIT_ERR_OOM;
            if (!vit_arena_counting(a)) memcpy(sc, scale, (size_t)rows * sizeof(float));
            scale = sc;
        }
        if (!vit_arena_counting(a))
            for (i = 0; i < (size_t)rows; i++)
                if (!(scale[i] > 0.0f && scale[i] <= VIT__I8_SCALE_MAX))
                    return vit__fail(VIT_ERR_FORMAT,
                                     "%s: scale tensor '%s' holds %g at row %d; scales must be > 0 and at most %g "
                                     "(FLT_MAX / 127), so that scale * q is finite",
                                     st->src, sn, (double)scale[i], (int)i, (double)VIT__I8_SCALE_MAX);
        if (dst->shape[1] > 65536)
            return vit__fail(
                VIT_ERR_UNSUPPORTED,
                "%s: I8 tensor '%s' has %d inputs; I8 products take at most 65536 (hint: export it as BF16)", st->src,
                e->name, (int)dst->shape[1]);
        if (vit_arena_counting(a) && !L->dense && (r = vit__ld_values(L, e, numel)) != VIT_OK)
            return r; /* a dense layer's: vit__ld_pack_entry */
    }

    /* kept as the file has them (BF16 or I8), copied only when misaligned,
       and packed for the products where the bytes are ours */
    if (L->dense) {
        int ours = L->writable;
        dst->dtype = e->dtype == VIT__I8 ? VIT_DTYPE_I8 : VIT_DTYPE_BF16;
        dst->act_bits = e->dtype == VIT__I8 ? L->act_bits : 0;
        dst->scale = scale;
        dst->q = src;
        if ((uintptr_t)src % (size_t)e->esize) { /* BF16 at an odd offset: copied */
            void *q = vit_arena_alloc(a, numel * (size_t)e->esize);
            if (!q) return VIT_ERR_OOM;
            if (!vit_arena_counting(a)) memcpy(q, src, numel * (size_t)e->esize);
            dst->q = q;
            ours = 1;
        }
        L->m->n_kept[dst->dtype] += (int64_t)numel;
        return vit__ld_pack_entry(L, dst, e, dst->q == src, ours);
    }

    /* else widened to F32 in the weights arena */
    if (!(dst->data = (float *)vit_arena_alloc(a, numel * sizeof(float)))) return VIT_ERR_OOM;
    if (vit_arena_counting(a)) return VIT_OK;
    if (e->dtype == VIT__BF16) vit__half_to_f32(dst->data, src, numel, 1);
    else
        for (row = numel / (size_t)rows, i = 0; i < numel; i++) dst->data[i] = scale[i / row] * (float)(int8_t)src[i];
    return VIT_OK;
}

/* Binds tensor `name`, which must have exactly the given PyTorch shape, to
   dst: in place for aligned F32, else converted into the weights arena
   (see vit__bind_low for BF16 and I8). The first (counting) pass also
   refuses NaN and Inf values, unless the caller allows them. */
static vit_result vit__bind(vit__ld *L, vit_tensor *dst, const char *name, int ndim, int64_t d0, int64_t d1, int64_t d2,
                            int64_t d3, const char *why) {
    vit__st *st = &L->st;
    vit__entry *e = NULL;
    int64_t want[4];
    size_t numel, len = strlen(name) + 1;
    const unsigned char *src;
    char *nm;
    vit_result r;
    int i;
    want[0] = d0; want[1] = d1; want[2] = d2; want[3] = d3;

    /* the tensor, with exactly the shape and a dtype vit.h reads */
    if (!(e = vit__entry_find(st, name)))
        return vit__fail(VIT_ERR_MISSING, "%s: missing tensor '%s' (%s)", st->src, name, why);
    for (i = 0; i < ndim && e->ndim == ndim; i++)
        if (e->shape[i] != want[i]) break;
    if (e->ndim != ndim || i != ndim) {
        char got[96], exp[96];
        vit__shape_text(got, sizeof got, e->ndim, e->shape);
        vit__shape_text(exp, sizeof exp, ndim, want);
        return vit__fail(VIT_ERR_SHAPE, "%s: tensor '%s' has shape %s, expected %s (%s)", st->src, name, got, exp, why);
    }
    if (e->dtype == VIT__OTHER)
        return vit__fail(VIT_ERR_DTYPE, "%s: tensor '%s' has dtype %s; vit.h reads F32, F16, BF16 and I8", st->src,
                         name, e->dtype_name);

    /* A dense layer's weight may be packed in place: no other part reads
       its bytes (as they lay in the file). */
    e->roles |= L->dense ? 1 : 2;
    if (e->roles == 3)
        return vit__fail(VIT_ERR_FORMAT,
                         "%s: tensor '%s' is read both as a dense layer's weight and as another part (%s)", st->src,
                         name, why);

    /* dst's shape and name. Its values are checked once (vit__ld_values): while counting, but a dense layer's
       weight's after the count, by vit__ld_pack_check */
    e->used = 1;
    memset(dst, 0, sizeof *dst);
    dst->ndim = ndim;
    for (i = 0; i < VIT_MAX_DIMS; i++) dst->shape[i] = i < ndim ? (int32_t)want[i] : 1;
    if (L->dense && ndim == 4) { /* the conv's (d0, d1, d2, d3) as the (d0, d1 d2 d3) matrix, the same bytes */
        dst->ndim = 2;
        dst->shape[1] = (int32_t)(d1 * d2 * d3);
        dst->shape[2] = dst->shape[3] = 1;
    }
    numel = vit_tensor_numel(dst);
    L->m->n_params += (int64_t)numel;
    if (!(nm = (char *)vit_arena_alloc(&L->m->arena, len))) return VIT_ERR_OOM;
    if (!vit_arena_counting(&L->m->arena)) memcpy(nm, name, len);
    dst->name = nm;
    src = st->data + e->begin;
    if (vit_arena_counting(&L->m->arena) && e->dtype != VIT__I8 && !L->dense && /* vit__bind_low's; dense: below */
        (r = vit__ld_values(L, e, numel)) != VIT_OK)
        return r;

    /* F32 in place when aligned, else converted into the weights arena; a
       dense layer's weight packed for the products where the bytes are ours */
    if (e->dtype == VIT__I8 || (L->dense && e->dtype == VIT__BF16)) return vit__bind_low(L, dst, e, src);
    if (e->dtype == VIT__F32 && (uintptr_t)src % sizeof(float) == 0) {
        dst->data = (float *)(uintptr_t)src; /* zero-copy; written only by the packing */
        return L->dense ? vit__ld_pack_entry(L, dst, e, 1, L->writable) : VIT_OK;
    }
    if (!(dst->data = (float *)vit_arena_alloc(&L->m->arena, numel * sizeof(float)))) return VIT_ERR_OOM;
    if (!vit_arena_counting(&L->m->arena)) {
        if (e->dtype == VIT__F32) memcpy(dst->data, src, numel * sizeof(float));
        else vit__half_to_f32(dst->data, src, numel, e->dtype == VIT__BF16);
    }
    return L->dense ? vit__ld_pack_check(L, dst, 1, e) : VIT_OK;
}

/* A dense layer's weight bound as the file holds it: F32 and F16 as
   vit__bind binds them, BF16 and I8 kept (in place when aligned). */
static vit_result vit__bind_dense(vit__ld *L, vit_tensor *dst, const char *name, int32_t out, int32_t in,
                                  const char *why) {
    vit_result r;
    L->dense = 1;
    r = vit__bind(L, dst, name, 2, out, in, 0, 0, why);
    L->dense = 0;
    return r;
}

static vit_result vit__bind_conv(vit__ld *L, vit_tensor *dst, const char *name, int32_t C, int32_t cin, int32_t P,
                                 const char *why) {
    const vit__entry *e = vit__entry_find(&L->st, name);
    vit_result r;
    L->dense = e && (e->dtype == VIT__BF16 || e->dtype == VIT__I8) && (int64_t)cin * P * P <= 65536;
    r = vit__bind(L, dst, name, 4, C, cin, P, P, why);
    L->dense = 0;
    return r;
}

/* n = prefix name suffix, or VIT_ERR_ARG where it would not fit (a name cut short would look up another). */
static vit_result vit__bind_name(char (*n)[256], const char *prefix, const char *name, const char *suffix) {
    if (snprintf(*n, sizeof *n, "%s%s%s", prefix, name, suffix) >= (int)sizeof *n)
        return vit__fail(VIT_ERR_ARG, "tensor name %s%s%s: longer than %d bytes", prefix, name, suffix,
                         (int)sizeof *n - 1);
    return VIT_OK;
}

static vit_result vit__bind_linear(vit__ld *L, vit_tensor *w, vit_tensor *b, const char *prefix, const char *name,
                                   int32_t out, int32_t in, const char *why) {
    char n[256];
    vit_result r;
    if ((r = vit__bind_name(&n, prefix, name, ".weight")) != VIT_OK ||
        (r = vit__bind_dense(L, w, n, out, in, why)) != VIT_OK ||
        (r = vit__bind_name(&n, prefix, name, ".bias")) != VIT_OK)
        return r;
    return vit__bind(L, b, n, 1, out, 0, 0, 0, why);
}

static vit_result vit__bind_ln(vit__ld *L, vit_tensor *w, vit_tensor *b, const char *prefix, const char *name,
                               int32_t C, const char *why) {
    char n[256];
    vit_result r;
    if ((r = vit__bind_name(&n, prefix, name, ".weight")) != VIT_OK ||
        (r = vit__bind(L, w, n, 1, C, 0, 0, 0, why)) != VIT_OK ||
        (r = vit__bind_name(&n, prefix, name, ".bias")) != VIT_OK)
        return r;
    return vit__bind(L, b, n, 1, C, 0, 0, 0, why);
}

static vit_result vit__bind_linear_opt(vit__ld *L, vit_tensor *w, vit_tensor *b, const char *prefix, const char *name,
                                       int32_t out, int32_t in, int bias, const char *why) {
    char n[256];
    if (bias) return vit__bind_linear(L, w, b, prefix, name, out, in, why);
    memset(b, 0, sizeof *b);
    snprintf(n, sizeof n, "%s%s.weight", prefix, name);
    return vit__bind_dense(L, w, n, out, in, why);
}

/* A fresh (rows, cols) tensor in the weights arena, for layouts fixed at load. */
static vit_result vit__own(vit__ld *L, vit_tensor *t, int32_t rows, int32_t cols) {
    const char *name = t->name;
    vit_result r = vit__tensor4(&L->m->arena, t, cols > 1 ? 2 : 1, rows, cols, 1, 1);
    t->name = name;
    return r;
}

/* The same of type dt (BF16, I8 with its row scales, or F32). */
static vit_result vit__own_as(vit__ld *L, vit_tensor *t, int32_t rows, int32_t cols, vit_dtype dt) {
    vit_arena *a = &L->m->arena;
    vit_result r;
    void *q;
    if ((r = vit__own(L, t, rows, dt == VIT_DTYPE_F32 ? cols : 1)) != VIT_OK || dt == VIT_DTYPE_F32) return r;
    /* vit__own took rows floats: the I8 scales, or unused (BF16) */
    if (!(q = vit_arena_alloc(a, (size_t)rows * cols * (dt == VIT_DTYPE_BF16 ? 2 : 1)))) return VIT_ERR_OOM;
    t->ndim = 2;
    t->shape[1] = cols;
    t->dtype = dt;
    t->q = q;
    t->scale = dt == VIT_DTYPE_I8 ? t->data : NULL;
    t->act_bits = dt == VIT_DTYPE_I8 ? L->act_bits : 0;
    t->data = NULL;
    return VIT_OK;
}

/* Where element (r, k) of a weight lies, in bytes from q (F32: data):
   row-major, or in its packed panel (vit__pack_weight). */
static size_t vit__q_off(const vit_tensor *t, int32_t r, int32_t k) {
    size_t es = (size_t)vit__dtype_bytes(t->dtype), K = (size_t)t->shape[1];
    size_t at = (size_t)k * es;
    size_t P = t->pack ? (size_t)t->pack->panel : 0;
    if (!P || (size_t)r >= (size_t)t->shape[0] / P * P) return (size_t)r * K * es + at;
    return (size_t)r / P * P * K * es + (at / 4 * P + (size_t)r % P) * 4 + at % 4;
}

/* Element (r, k) of a BF16 (its bits) or I8 weight (its byte). */
static unsigned vit__q_at(const vit_tensor *t, int32_t r, int32_t k) {
    const unsigned char *b = (const unsigned char *)t->q + vit__q_off(t, r, k);
    return t->dtype == VIT_DTYPE_BF16 ? (unsigned)(b[0] | b[1] << 8) : b[0];
}

/* Row r of a BF16 or I8 weight into dst, row-major. */
static void vit__q_row(unsigned char *dst, const vit_tensor *t, int32_t r) {
    size_t es = t->dtype == VIT_DTYPE_BF16 ? 2 : 1, K = (size_t)t->shape[1], g;
    if (!t->pack) {
        memcpy(dst, (const unsigned char *)t->q + vit__q_off(t, r, 0), K * es);
        return;
    }
    for (g = 0; g < K * es; g += 4)
        memcpy(dst + g, (const unsigned char *)t->q + vit__q_off(t, r, (int32_t)(g / es)), 4);
}

/* Row `from` of src into row `to` of dst, both (rows, cols): a copy when
   their types match, else widened into dst's F32. */
static void vit__row_copy(vit_tensor *dst, int32_t to, const vit_tensor *src, int32_t from) {
    size_t cols = vit_tensor_numel(dst) / (size_t)dst->shape[0], k, es = dst->dtype == VIT_DTYPE_BF16 ? 2 : 1;
    if (dst->dtype == src->dtype && dst->dtype != VIT_DTYPE_F32) {
        vit__q_row((unsigned char *)(uintptr_t)dst->q + (size_t)to * cols * es, src, from);
        if (dst->scale) ((float *)(uintptr_t)dst->scale)[to] = src->scale[from];
        return;
    }
    VIT_ASSERT(dst->dtype == VIT_DTYPE_F32);
    for (k = 0; k < cols; k++) {
        float v = src->dtype == VIT_DTYPE_F32    ? src->data[vit__q_off(src, from, (int32_t)k) / 4]
                  : src->dtype == VIT_DTYPE_BF16 ? vit__bf16_float(vit__q_at(src, from, (int32_t)k))
                                                 : src->scale[from] * (float)(int8_t)vit__q_at(src, from, (int32_t)k);
        dst->data[(size_t)to * cols + k] = v;
    }
}

static int vit__ld_counting(const vit__ld *L) { return vit_arena_counting(&L->m->arena); }

static const char *vit__ld_src(const vit__ld *L) { return L->st.src; }

static int vit__has(const vit__ld *L, const char *name) { return vit__entry_find(&L->st, name) != NULL; }

/* ---- model: config.json and label files ---- */
/* A checkpoint without vit.h metadata may come with a config.json: a
   transformers ViTConfig (num_attention_heads, layer_norm_eps, hidden_act,
   id2label, the sizes) or timm's hub config (global_pool, label_names and
   label_descriptions, model_args, pretrained_cfg). It goes through the
   safetensors header's bounded JSON reader with a temporary arena sized
   from its length, as there; other keys are skipped, depth-limited. A
   labels file is plain text, one name a line. */

typedef struct vit__label_desc { const char *name, *text; } vit__label_desc;

typedef struct vit__timm_arg { const char *key, *runs, *what; } vit__timm_arg;

/* transformers' BEiT switches: each makes or drops tensors, so the file's
   must agree (vit__infer checks them); layer_scale_init_value counts as
   on when above 0. */
enum { VIT__BEIT_ABS_POS = 0, VIT__BEIT_REL_POS, VIT__BEIT_SHARED_REL_POS, VIT__BEIT_LAYER_SCALE, VIT__BEIT_MEAN_POOL,
       VIT__BEIT_SWITCHES };
static const char *const vit__beit_keys[VIT__BEIT_SWITCHES] = {
    "use_absolute_position_embeddings", "use_relative_position_bias", "use_shared_relative_position_bias",
    "layer_scale_init_value", "use_mean_pooling"};

typedef struct vit__cfg {
    vit__st st;                 /* st.src names the file; st.tmp holds its strings */
    int32_t heads;              /* num_attention_heads or model_args.num_heads; 0: absent */
    int32_t hidden, layers, mlp, image, patch, channels; /* transformers' sizes; 0: absent */
    double ln_eps;              /* layer_norm_eps; 0: absent */
    const char *act;            /* hidden_act, or NULL */
    const char *pool;           /* timm's global_pool (model_args' over the top level's), or NULL */
    int32_t fc_norm;            /* timm's model_args.fc_norm: -1 absent or null, else 0 or 1 */
    const char *arch;           /* timm's architecture, or NULL */
    const char *model_type;     /* transformers' model_type, or NULL */
    const char *hf_arch;        /* transformers' architectures[0], or NULL */
    int32_t beit[VIT__BEIT_SWITCHES]; /* transformers' BEiT switches (vit__beit_keys): -1 absent, else 0 or 1 */
    int32_t depth, embed_dim, reg_tokens; /* timm's model_args depth, embed_dim and reg_tokens; -1: absent */
    int32_t use_rope, rope_ref; /* timm's model_args use_rot_pos_emb (0/1) and ref_feat_shape (0: null); -1: absent */
    int32_t rope_type;          /* model_args rope_type as a vit_rope; -1: absent */
    double rope_temp, rope_offset; /* rope_temperature (0: absent), rope_grid_offset (-1e300: absent) */
    int32_t rope_xy, rope_half;    /* rope_grid_indexing 'xy' (1) or 'ij' (0), rope_rotate_half; -1: absent */
    int32_t pool_heads;            /* attn_pool_num_heads; 0: absent */
    const vit__timm_arg *bad_arg; /* the first model_args member whose value vit.h does not run, or NULL */
    const char *bad_value;        /* its value, as text */
    const char **labels;        /* n_labels class names by index, in cap slots */
    int32_t n_labels, cap;
    const char *labels_key;     /* "id2label" or "label_names" */
    vit__label_desc *desc;      /* n_desc of timm's label_descriptions, in cap slots */
    int32_t n_desc;
    char mean[64], std[64],
        crop[32]; /* timm's pretrained_cfg (or transformers' image_mean, image_std), as text: "0.5,0.5,0.5" */
    char interp[16], crop_mode[16];   /* timm's pretrained_cfg interpolation and crop_mode */
    /* transformers' preprocessor_config.json: resample (PIL's filter
       number; -1 absent), size {height, width} or {shortest_edge},
       crop_size (0 absent), do_center_crop (-1 absent) */
    int32_t resample, size_h, size_w, size_short, crop_size, center_crop;
    int pp;          /* parsing a preprocessor_config.json: its keys are read */
    int pcfg;        /* a timm pretrained_cfg was seen: timm's defaults apply */
} vit__cfg;

/* An integer in [1, hi]; null leaves *out unchanged. */
static vit_result vit__cfg_int(vit__cfg *c, vit__json *j, const char *key, int32_t hi, int32_t *out) {
    double v;
    if (vit__json_word(j, "null")) return VIT_OK;
    if (!vit__json_num(j, &v) || v < 1.0 || v > (double)hi || v != floor(v))
        return vit__fail(VIT_ERR_FORMAT, "%s: '%s' is not an integer in 1..%ld", c->st.src, key, (long)hi);
    *out = (int32_t)v;
    return VIT_OK;
}

/* true or false; null is absent (-1). */
static vit_result vit__cfg_bool(vit__cfg *c, vit__json *j, const char *key, int32_t *out) {
    if (vit__json_word(j, "true")) *out = 1;
    else if (vit__json_word(j, "false")) *out = 0;
    else if (vit__json_word(j, "null")) *out = -1;
    else return vit__fail(VIT_ERR_FORMAT, "%s: '%s' is not true, false or null", c->st.src, key);
    return VIT_OK;
}

/* The index of key in words[0..n-1], or -1. */
static int vit__word_index(const char *const *words, int n, const char *key) {
    int i;
    for (i = 0; i < n; i++)
        if (!strcmp(words[i], key)) return i;
    return -1;
}

/* One of transformers' BEiT switches (vit__beit_keys[i]) into c->beit[i]. */
static vit_result vit__cfg_beit(vit__cfg *c, vit__json *j, int i) {
    double v;
    if (i != VIT__BEIT_LAYER_SCALE) return vit__cfg_bool(c, j, vit__beit_keys[i], &c->beit[i]);
    if (vit__json_word(j, "null")) c->beit[i] = -1;
    else if (!vit__json_num(j, &v) || !(v >= 0.0))
        return vit__fail(VIT_ERR_FORMAT, "%s: '%s' is not a number >= 0", c->st.src, vit__beit_keys[i]);
    else c->beit[i] = v > 0.0;
    return VIT_OK;
}

/* A string, or null (*out = NULL). */
static vit_result vit__cfg_str(vit__cfg *c, vit__json *j, const char *key, const char **out) {
    if (vit__json_word(j, "null")) { *out = NULL; return VIT_OK; }
    if (!vit__json_str(j, out)) return vit__fail(VIT_ERR_FORMAT, "%s: '%s' is not a string", c->st.src, key);
    return VIT_OK;
}

/* One number, or a list of up to 3 (timm's mean and std), as text "a,b,c". */
static vit_result vit__cfg_nums(vit__cfg *c, vit__json *j, const char *key, char *out, size_t n) {
    int k = 0, list;
    size_t u = 0;
    double v;
    if (vit__json_word(j, "null")) return VIT_OK;
    list = vit__json_eat(j, '[');
    do {
        if (k == 3 || !vit__json_num(j, &v) || (u += (size_t)snprintf(out + u, n - u, k ? ",%g" : "%g", v)) >= n)
            return vit__fail(VIT_ERR_FORMAT, "%s: '%s' is not a number or a list of up to 3 numbers", c->st.src, key);
        k++;
    } while (list && vit__json_eat(j, ','));
    if (list && !vit__json_eat(j, ']'))
        return vit__fail(VIT_ERR_FORMAT, "%s: '%s' is not a list of numbers", c->st.src, key);
    return VIT_OK;
}

/* Class names: a list, or an object from class indices "0".."n-1" to
   names (transformers' id2label, which it writes sorted as strings). */
static vit_result vit__cfg_labels(vit__cfg *c, vit__json *j, const char *key) {
    int32_t n = 0, top = -1, obj;
    if (vit__json_word(j, "null")) return VIT_OK;
    obj = vit__json_eat(j, '{');
    if (!obj && !vit__json_eat(j, '['))
        return vit__fail(VIT_ERR_FORMAT, "%s: '%s' is not an object or a list", c->st.src, key);
    memset(c->labels, 0, (size_t)c->cap * sizeof(char *));
    if (!vit__json_eat(j, obj ? '}' : ']')) {
        do {
            const char *k = NULL, *v, *q;
            int32_t id = n;
            if (obj) {
                if (!vit__json_str(j, &k) || !vit__json_eat(j, ':'))
                    return vit__fail(VIT_ERR_FORMAT, "%s: bad JSON in '%s'", c->st.src, key);
                for (id = 0, q = k; *q >= '0' && *q <= '9' && q - k < 9; q++) id = id * 10 + (*q - '0');
                if (*q || q == k)
                    return vit__fail(VIT_ERR_FORMAT, "%s: '%s' key \"%s\" is not a class index", c->st.src, key, k);
            }
            if (!vit__json_str(j, &v))
                return vit__fail(VIT_ERR_FORMAT, "%s: '%s' entry %ld is not a string", c->st.src, key, (long)id);
            if (id >= c->cap)
                return vit__fail(VIT_ERR_FORMAT,
                                 "%s: '%s' key \"%s\" is out of range: classes 0..n-1 need one name each", c->st.src,
                                 key, k);
            if (c->labels[id])
                return vit__fail(VIT_ERR_FORMAT, "%s: '%s' names class %ld twice", c->st.src, key, (long)id);
            c->labels[id] = v;
            n++;
            if (id > top) top = id;
        } while (vit__json_eat(j, ','));
        if (!vit__json_eat(j, obj ? '}' : ']'))
            return vit__fail(VIT_ERR_FORMAT, "%s: bad JSON in '%s'", c->st.src, key);
    }
    if (top + 1 != n)
        return vit__fail(VIT_ERR_FORMAT, "%s: '%s' has %ld names for classes up to %ld; classes 0..n-1 need one each",
                         c->st.src, key, (long)n, (long)top);
    c->n_labels = n;
    c->labels_key = key;
    return VIT_OK;
}

/* timm's label_descriptions: {"n01440764": "tench, Tinca tinca", ...}. */
static vit_result vit__cfg_desc(vit__cfg *c, vit__json *j) {
    c->n_desc = 0;
    if (vit__json_word(j, "null")) return VIT_OK;
    if (!vit__json_eat(j, '{'))
        return vit__fail(VIT_ERR_FORMAT, "%s: 'label_descriptions' is not an object", c->st.src);
    if (vit__json_eat(j, '}')) return VIT_OK;
    do {
        vit__label_desc *d = &c->desc[c->n_desc];
        if (c->n_desc >= c->cap || !vit__json_str(j, &d->name) || !vit__json_eat(j, ':') || !vit__json_str(j, &d->text))
            return vit__fail(VIT_ERR_FORMAT, "%s: 'label_descriptions' must map strings to strings", c->st.src);
        c->n_desc++;
    } while (vit__json_eat(j, ','));
    return vit__json_eat(j, '}') ? VIT_OK
                                 : vit__fail(VIT_ERR_FORMAT, "%s: bad JSON in 'label_descriptions'", c->st.src);
}

static int vit__desc_cmp(const void *a, const void *b) {
    return strcmp(((const vit__label_desc *)a)->name, ((const vit__label_desc *)b)->name);
}

/* 1 if name ("" for absent) is one of list's ';'-separated entries. */
static int vit__in_list(const char *list, const char *name) {
    size_t n = strlen(name);
    for (;;) {
        const char *e = strchr(list, ';');
        size_t len = e ? (size_t)(e - list) : strlen(list);
        if (len == n && !strncmp(list, name, n)) return 1;
        if (!e) return 0;
        list = e + 1;
    }
}

/* timm's model_args that change what a VisionTransformer computes without
   (always) changing its tensors: the values vit.h runs (';'-separated: a
   JSON word or a string's text), and what another value would be. */
static const vit__timm_arg vit__timm_args[] = {
    {"pool_include_prefix", "false;null", "a pool over the prefix tokens too"},
    {"scale_attn_norm", "false;null", "a LayerNorm inside the attention"},
    {"scale_mlp_norm", "false;null", "a LayerNorm inside the MLP"},
    {"final_norm", "true;null", "no final LayerNorm"},
    {"proj_bias", "true;null", "projections without biases"},
    {"pos_embed", "learn;null", "another position embedding than a learned one"},
    {"norm_layer", "layernorm;null", "another norm than LayerNorm"},
    {"embed_norm_layer", "null", "a norm in the patch embedding"},
    {"attn_layer", "attention;null", "another attention than timm's Attention"},
    {"block_fn", "block;null", "another block than timm's Block"},
    {"mlp_layer", "mlp;null", "another MLP than timm's Mlp"},
    {"dynamic_img_pad", "false;null", "inputs padded to a multiple of the patch"},
    /* timm's Eva (its rotary embedding's settings are read apart; a norm before the blocks has tensors) */
    {"scale_attn_inner", "false;null", "a LayerNorm inside the attention"},
    {"use_post_norm", "false;null", "post-norm blocks"},
    {"use_post_transformer_norm", "true;null", "no LayerNorm after the blocks"},
    {"attn_type", "eva;rope;null", "another attention than timm's EvaAttention and AttentionRope"},
    {"gated_attn", "false;null", "a gated attention"}};

static const vit__timm_arg *vit__timm_arg_find(const char *key) {
    size_t i;
    for (i = 0; i < sizeof vit__timm_args / sizeof vit__timm_args[0]; i++)
        if (!strcmp(vit__timm_args[i].key, key)) return &vit__timm_args[i];
    return NULL;
}

/* A model_args member of vit__timm_args: true, false, null or a string;
   the first value vit.h does not run is kept for the refusal. */
static vit_result vit__cfg_arg(vit__cfg *c, vit__json *j, const vit__timm_arg *a) {
    const char *v = NULL;
    if (vit__json_word(j, "true")) v = "true";
    else if (vit__json_word(j, "false")) v = "false";
    else if (vit__json_word(j, "null")) v = "null";
    else if (!vit__json_str(j, &v))
        return vit__fail(VIT_ERR_FORMAT, "%s: model_args '%s' is not true, false, null or a string", c->st.src, a->key);
    if (!c->bad_arg && !vit__in_list(a->runs, v)) {
        c->bad_arg = a;
        c->bad_value = v;
    }
    return VIT_OK;
}

/* The members of one object: level 0 the top, 1 timm's model_args, 2 its
   pretrained_cfg, 3 a CLIPModel's or SiglipModel's vision_config, 4 and 5
   a preprocessor_config.json's size and crop_size. Unknown members are
   skipped. */
static vit_result vit__cfg_object(vit__cfg *c, vit__json *j, int level) {
    vit_result r = VIT_OK;
    if (!vit__json_eat(j, '{'))
        return vit__fail(VIT_ERR_FORMAT, "%s: %s is not a JSON object", c->st.src, level ? "a section" : "the file");
    if (vit__json_eat(j, '}')) return VIT_OK;
    do {
        const char *k, *s;
        const vit__timm_arg *a;
        int b, sizes = level == 0 || level == 3; /* the model's sizes: at the top, or in a vision_config */
        if (!vit__json_str(j, &k) || !vit__json_eat(j, ':'))
            return vit__fail(VIT_ERR_FORMAT, "%s: bad JSON (a key was expected)", c->st.src);

        /* each key by the level it sits at: 0 the file, 1 model_args, 2 pretrained_cfg, 3 vision_config, 4-5 sizes */
        if (sizes && !strcmp(k, "num_attention_heads")) r = vit__cfg_int(c, j, k, 65536, &c->heads);
        else if (sizes && !strcmp(k, "hidden_size")) r = vit__cfg_int(c, j, k, 65536, &c->hidden);
        else if (sizes && !strcmp(k, "num_hidden_layers")) r = vit__cfg_int(c, j, k, 1024, &c->layers);
        else if (sizes && !strcmp(k, "intermediate_size")) r = vit__cfg_int(c, j, k, 1 << 20, &c->mlp);
        else if (sizes && !strcmp(k, "image_size")) r = vit__cfg_int(c, j, k, 8192, &c->image);
        else if (sizes && !strcmp(k, "patch_size")) r = vit__cfg_int(c, j, k, 8192, &c->patch);
        else if (sizes && !strcmp(k, "num_channels")) r = vit__cfg_int(c, j, k, 64, &c->channels);
        else if (sizes && !strcmp(k, "layer_norm_eps")) {
            if (!vit__json_num(j, &c->ln_eps) || !(c->ln_eps > 0.0 && c->ln_eps < 1.0) || (float)c->ln_eps == 0.0f)
                return vit__fail(VIT_ERR_FORMAT, "%s: 'layer_norm_eps' is not a number in (0, 1) that a float32 holds",
                                 c->st.src);
        } else if (sizes && !strcmp(k, "hidden_act")) r = vit__cfg_str(c, j, k, &c->act);
        else if (level == 0 && !strcmp(k, "id2label")) r = vit__cfg_labels(c, j, "id2label");
        else if (level == 0 && !strcmp(k, "label_names")) r = vit__cfg_labels(c, j, "label_names");
        else if (level == 0 && !strcmp(k, "label_descriptions")) r = vit__cfg_desc(c, j);
        else if (level == 0 && !strcmp(k, "architecture")) r = vit__cfg_str(c, j, k, &c->arch);
        else if (level == 0 && !strcmp(k, "model_type")) r = vit__cfg_str(c, j, k, &c->model_type);
        else if (level == 0 && (b = vit__word_index(vit__beit_keys, VIT__BEIT_SWITCHES, k)) >= 0)
            r = vit__cfg_beit(c, j, b);
        else if (level == 0 && !strcmp(k, "architectures")) {
            int ok = vit__json_eat(j, '[');
            if (ok && !vit__json_eat(j, ']')) {
                ok = vit__json_str(j, &c->hf_arch);
                while (ok && vit__json_eat(j, ',')) ok = vit__json_skip(j, 1);
                ok = ok && vit__json_eat(j, ']');
            }
            if (!ok) return vit__fail(VIT_ERR_FORMAT, "%s: 'architectures' is not a list of strings", c->st.src);
        } else if (level == 0 && !strcmp(k, "model_args")) r = vit__cfg_object(c, j, 1);
        else if (level == 0 && !strcmp(k, "vision_config"))
            r = vit__cfg_object(c, j, 3); /* a CLIPModel's or SiglipModel's */
        else if (level == 1 && !strcmp(k, "act_layer")) r = vit__cfg_str(c, j, k, &c->act);
        else if (level == 0 && !strcmp(k, "pretrained_cfg")) {
            c->pcfg = 1;
            r = vit__cfg_object(c, j, 2);
        }
        else if (level <= 1 && !strcmp(k, "global_pool")) {
            if ((r = vit__cfg_str(c, j, k, &s)) == VIT_OK && s && (level == 1 || !c->pool)) c->pool = s;
        } else if (level == 1 && !strcmp(k, "num_heads")) r = vit__cfg_int(c, j, k, 65536, &c->heads);
        else if (level == 1 && !strcmp(k, "depth")) r = vit__cfg_int(c, j, k, 1024, &c->depth);
        else if (level == 1 && !strcmp(k, "embed_dim")) r = vit__cfg_int(c, j, k, 65536, &c->embed_dim);
        else if (level == 1 && !strcmp(k, "reg_tokens")) {
            double v; /* 0 is a count here; null leaves it absent */
            if (vit__json_word(j, "null")) v = -1.0;
            else if (!vit__json_num(j, &v) || v < 0.0 || v > 1024.0 || v != floor(v))
                return vit__fail(VIT_ERR_FORMAT, "%s: 'reg_tokens' is not an integer in 0..1024", c->st.src);
            c->reg_tokens = (int32_t)v;
        }
        else if (level == 1 && (a = vit__timm_arg_find(k)) != NULL) r = vit__cfg_arg(c, j, a);
        else if (level == 1 && !strcmp(k, "rope_type")) {
            static const char *const kinds[] = {"", "cat", "dinov3", "mixed"};
            if ((r = vit__cfg_str(c, j, k, &s)) == VIT_OK && s) {
                for (c->rope_type = 3; c->rope_type > 0 && strcmp(s, kinds[c->rope_type]); c->rope_type--) {}
                if (!c->rope_type)
                    return vit__fail(VIT_ERR_UNSUPPORTED,
                                     "%s: model_args 'rope_type' is '%s': vit.h runs timm's 'cat', 'dinov3' and "
                                     "'mixed' rotary embeddings", c->st.src, s);
            }
        } else if (level == 1 && (!strcmp(k, "rope_temperature") || !strcmp(k, "rope_grid_offset"))) {
            double v;
            int temp = k[5] == 't';
            if (!vit__json_num(j, &v) || (temp ? !(v > 0.0 && v < 1e9) : !(v > -8192.0 && v < 8192.0)))
                return vit__fail(VIT_ERR_FORMAT, "%s: model_args '%s' is not a number in %s", c->st.src, k,
                                 temp ? "(0, 1e9)" : "(-8192, 8192)");
            *(temp ? &c->rope_temp : &c->rope_offset) = v;
        } else if (level == 1 && !strcmp(k, "rope_grid_indexing")) {
            if ((r = vit__cfg_str(c, j, k, &s)) == VIT_OK && s) {
                if (strcmp(s, "ij") && strcmp(s, "xy"))
                    return vit__fail(VIT_ERR_FORMAT, "%s: model_args 'rope_grid_indexing' is '%s', not 'ij' or 'xy'",
                                     c->st.src, s);
                c->rope_xy = s[0] == 'x';
            }
        } else if (level == 1 && !strcmp(k, "rope_rotate_half")) {
            if (vit__json_word(j, "true")) c->rope_half = 1;
            else if (vit__json_word(j, "false")) c->rope_half = 0;
            else return vit__fail(VIT_ERR_FORMAT, "%s: 'rope_rotate_half' is not true or false", c->st.src);
        } else if (level == 1 && !strcmp(k, "attn_pool_num_heads")) r = vit__cfg_int(c, j, k, 65536, &c->pool_heads);
        else if (level == 1 && !strcmp(k, "use_rot_pos_emb")) {
            if (vit__json_word(j, "true")) c->use_rope = 1;
            else if (vit__json_word(j, "false")) c->use_rope = 0;
            else return vit__fail(VIT_ERR_FORMAT, "%s: 'use_rot_pos_emb' is not true or false", c->st.src);
        } else if (level == 1 && !strcmp(k, "ref_feat_shape")) {
            /* EVA-02's rotary reference grid: N or [N, N], or null */
            double v[2];
            int n = 0, list = vit__json_eat(j, '[');
            if (!list && vit__json_word(j, "null")) c->rope_ref = 0;
            else {
                while (n < 2 && vit__json_num(j, &v[n])) {
                    n++;
                    if (!list || !vit__json_eat(j, ',')) break;
                }
                if (n < 1 || (list && !vit__json_eat(j, ']')) || v[0] < 1 || v[0] > 8192 || v[0] != floor(v[0]) ||
                    (n == 2 && v[1] != v[0]))
                    return vit__fail(VIT_ERR_FORMAT, "%s: 'ref_feat_shape' is not a square grid (N or [N, N])",
                                     c->st.src);
                c->rope_ref = (int32_t)v[0];
            }
        }
        else if (level == 1 && !strcmp(k, "fc_norm")) r = vit__cfg_bool(c, j, k, &c->fc_norm);
        else if (level == 2 && !strcmp(k, "mean")) r = vit__cfg_nums(c, j, k, c->mean, sizeof c->mean);
        else if (level == 2 && !strcmp(k, "std")) r = vit__cfg_nums(c, j, k, c->std, sizeof c->std);
        else if (level == 2 && !strcmp(k, "crop_pct")) r = vit__cfg_nums(c, j, k, c->crop, sizeof c->crop);
        else if (level == 2 && (!strcmp(k, "interpolation") || !strcmp(k, "crop_mode"))) {
            char *dst = k[0] == 'i' ? c->interp : c->crop_mode;
            if ((r = vit__cfg_str(c, j, k, &s)) == VIT_OK && s) snprintf(dst, 16, "%s", s);
        } else if (level == 0 && c->pp && !strcmp(k, "image_mean")) r = vit__cfg_nums(c, j, k, c->mean, sizeof c->mean);
        else if (level == 0 && c->pp && !strcmp(k, "image_std")) r = vit__cfg_nums(c, j, k, c->std, sizeof c->std);
        else if (level == 0 && c->pp && !strcmp(k, "resample")) {
            double v;
            if (!vit__json_num(j, &v) || v < 0.0 || v > 5.0 || v != floor(v))
                return vit__fail(VIT_ERR_FORMAT, "%s: 'resample' is not one of PIL's filters, 0..5", c->st.src);
            c->resample = (int32_t)v;
        }
        else if (level == 0 && c->pp && !strcmp(k, "do_center_crop")) {
            if (vit__json_word(j, "true")) c->center_crop = 1;
            else if (vit__json_word(j, "false")) c->center_crop = 0;
            else return vit__fail(VIT_ERR_FORMAT, "%s: 'do_center_crop' is not true or false", c->st.src);
        } else if (level == 0 && c->pp && (!strcmp(k, "size") || !strcmp(k, "crop_size"))) {
            /* a number, or {height, width} / {shortest_edge} */
            int32_t *one = k[0] == 's' ? &c->size_short : &c->crop_size;
            vit__json_ws(j);
            if (j->p < j->end && *j->p == '{') r = vit__cfg_object(c, j, k[0] == 's' ? 4 : 5);
            else r = vit__cfg_int(c, j, k, 8192, one);
        } else if (level >= 4 && (!strcmp(k, "height") || !strcmp(k, "width") || !strcmp(k, "shortest_edge"))) {
            int32_t *dst = level == 5    ? &c->crop_size
                           : k[0] == 'h' ? &c->size_h
                           : k[0] == 'w' ? &c->size_w
                                         : &c->size_short;
            r = vit__cfg_int(c, j, k, 8192, dst);
        }
        else if (level == 1 && !strcmp(k, "img_size")) {
            /* the size the model was built for: N or [N, N] */
            double v[2];
            int n = 0, list = vit__json_eat(j, '[');
            while (n < 2 && vit__json_num(j, &v[n])) {
                n++;
                if (!list || !vit__json_eat(j, ',')) break;
            }
            if (n < 1 || (list && !vit__json_eat(j, ']')) || v[0] < 1 || v[0] > 8192 || v[0] != floor(v[0]) ||
                (n == 2 && v[1] != v[0]))
                return vit__fail(VIT_ERR_FORMAT, "%s: 'img_size' is not a square size (N or [N, N])", c->st.src);
            c->image = (int32_t)v[0];
        }
        else if (!vit__json_skip(j, level + 1)) return vit__fail(VIT_ERR_FORMAT, "%s: bad JSON in '%s'", c->st.src, k);
        if (r != VIT_OK) return r;
    } while (vit__json_eat(j, ','));
    return vit__json_eat(j, '}') ? VIT_OK
                                 : vit__fail(VIT_ERR_FORMAT, "%s: bad JSON (',' or '}' was expected)", c->st.src);
}

/* Parses config.json text (n bytes) into c; c->st.src must be set. The
   caller frees c->st.tmp, on failure too. */
static vit_result vit__cfg_parse(vit__cfg *c, const char *text, size_t n) {
    vit__json j;
    vit_result r;
    int32_t i;
    c->fc_norm = -1;
    c->center_crop = -1;
    c->depth = c->embed_dim = c->reg_tokens = -1;
    c->use_rope = c->rope_ref = c->rope_type = c->rope_xy = c->rope_half = -1;
    c->rope_offset = -1e300;
    for (i = 0; i < VIT__BEIT_SWITCHES; i++) c->beit[i] = -1;
    if (n > ((size_t)16 << 20))
        return vit__fail(VIT_ERR_FORMAT, "%s: %zu bytes is too large for a config.json", c->st.src, n);
    /* Each string (>= 3 JSON bytes with its separator) takes at most its
       length + VIT_ALIGN; a list or object has at most n/2 + 1 entries. */
    c->cap = (int32_t)(n / 2) + 1;
    if ((r = vit_arena_init_alloc(&c->st.tmp, n * 32 + (size_t)c->cap * (sizeof(char *) + sizeof(vit__label_desc)) +
                                                  4096)) != VIT_OK)
        return r;
    c->labels = (const char **)vit_arena_alloc(&c->st.tmp, (size_t)c->cap * sizeof(char *));
    c->desc = (vit__label_desc *)vit_arena_alloc(&c->st.tmp, (size_t)c->cap * sizeof(vit__label_desc));
    if (!c->labels || !c->desc) return VIT_ERR_OOM;
    j.p = text;
    j.end = text + n;
    j.st = &c->st;
    if (n >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) j.p += 3; /* a UTF-8 byte order mark */
    if ((r = vit__cfg_object(c, &j, 0)) != VIT_OK) return r;
    vit__json_ws(&j);
    if (j.p != j.end) return vit__fail(VIT_ERR_FORMAT, "%s: trailing bytes after the JSON object", c->st.src);
    /* timm's label_names are often synsets; show their descriptions. */
    if (c->n_labels && c->n_desc) {
        qsort(c->desc, (size_t)c->n_desc, sizeof(vit__label_desc), vit__desc_cmp);
        for (i = 0; i < c->n_labels; i++) {
            vit__label_desc key, *d;
            key.name = c->labels[i];
            key.text = NULL;
            d = (vit__label_desc *)bsearch(&key, c->desc, (size_t)c->n_desc, sizeof(vit__label_desc), vit__desc_cmp);
            if (d) c->labels[i] = d->text;
        }
    }
    return VIT_OK;
}

/* Splits text (n bytes, no NUL) into class names, one a line (sep '\n') or
   comma-separated (','): a '\r' at the end of a name is dropped, and a
   final separator ends the last name. The names live in arena a, made here
   (the caller frees it, on failure too). */
static vit_result vit__labels_parse(vit_arena *a, const char *src, const char *text, size_t n, char sep,
                                    const char ***out, int32_t *count) {
    size_t i, lines = 0;
    const char **lab;
    char *buf, *p;
    vit_result r;
    if (n > ((size_t)64 << 20))
        return vit__fail(VIT_ERR_FORMAT, "%s: %zu bytes is too large for a labels file", src, n);
    for (i = 0; i < n; i++) {
        if (text[i] == sep) lines++;
        else if (text[i] == 0)
            return vit__fail(VIT_ERR_FORMAT, "%s: line %zu holds a NUL byte (not a text file?)", src, lines + 1);
    }
    if (n && text[n - 1] != sep) lines++;
    if (!lines) return vit__fail(VIT_ERR_FORMAT, "%s: no labels (the file is empty)", src);
    if ((r = vit_arena_init_alloc(a, lines * sizeof(char *) + n + 1 + 2 * VIT_ALIGN)) != VIT_OK) return r;
    lab = (const char **)vit_arena_alloc(a, lines * sizeof(char *));
    buf = (char *)vit_arena_alloc(a, n + 1);
    if (!lab || !buf) return VIT_ERR_OOM;
    memcpy(buf, text, n);
    buf[n] = 0;
    for (i = 0, p = buf; i < lines; i++) {
        char *e = strchr(p, sep);
        size_t len;
        if (e) *e = 0;
        len = strlen(p);
        if (len && p[len - 1] == '\r') p[len - 1] = 0;
        lab[i] = p;
        p += len + 1;
    }
    *out = lab;
    *count = (int32_t)lines;
    return VIT_OK;
}

#ifndef VIT_NO_STDIO
/* The size of the regular file at path, checked before anything is read or
   allocated: a missing file gets errno's text, a directory says so. */
static vit_result vit__file_size(const char *path, size_t *size) {
#ifdef VIT__HAVE_STAT
    struct stat sb;
    if (stat(path, &sb) != 0) return vit__fail(VIT_ERR_IO, "%s: cannot open (%s)", path, strerror(errno));
    if (VIT__IS_DIR(sb.st_mode)) return vit__fail(VIT_ERR_IO, "%s: is a directory, not a file", path);
    if (!VIT__IS_REG(sb.st_mode)) return vit__fail(VIT_ERR_IO, "%s: is not a regular file", path);
    if ((unsigned long long)sb.st_size > (size_t)-1)
        return vit__fail(VIT_ERR_UNSUPPORTED, "%s: too large for this machine's address space", path);
    *size = (size_t)sb.st_size;
    return VIT_OK;
#else
    FILE *f = fopen(path, "rb");
    long n;
    if (!f) return vit__fail(VIT_ERR_IO, "%s: cannot open (%s)", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0) {
        fclose(f);
        return vit__fail(VIT_ERR_IO, "%s: cannot find its size (not a regular file?)", path);
    }
    fclose(f);
    *size = (size_t)n;
    return VIT_OK;
#endif
}

/* The whole of a file of at most `limit` bytes in a fresh arena of its own
   (the caller frees it; freed here on failure), NUL-terminated. The size is
   checked before anything is allocated. */
static vit_result vit__read_file(const char *path, size_t limit, vit_arena *buf, size_t *len) {
    size_t n, got;
    vit_result r;
    FILE *f;
    memset(buf, 0, sizeof *buf);
    if ((r = vit__file_size(path, &n)) != VIT_OK) return r;
    if (n > limit)
        return vit__fail(VIT_ERR_UNSUPPORTED, "%s: %zu bytes is more than the %zu vit.h reads from such a file", path,
                         n, limit);
    if (!(f = fopen(path, "rb"))) return vit__fail(VIT_ERR_IO, "%s: cannot open (%s)", path, strerror(errno));
    if ((r = vit_arena_init_alloc(buf, n + 1)) != VIT_OK) {
        fclose(f);
        return r;
    }
    got = fread(buf->base, 1, n, f);
    fclose(f);
    if (got != n) {
        vit_arena_free(buf);
        return vit__fail(VIT_ERR_IO, "%s: short read (%zu of %zu bytes; did the file change?)", path, got, n);
    }
    buf->base[n] = 0;
    *len = n;
    return VIT_OK;
}
#endif

/* ---- model: the ViT ---- */
/* "An Image is Worth 16x16 Words" (Dosovitskiy et al. 2021): patch
   embedding, class token and position embedding, depth encoder blocks, a
   final LayerNorm, a pool, an optional pre-logits layer, the head. Its
   checkpoint namings are complete rows: what a file of each holds, and
   the defaults each library uses where a checkpoint says nothing. */

/* The prefix tokens before the patches: class, distillation, registers. */
static int32_t vit__prefix(const vit_config *c) {
    return (c->class_token ? 1 : 0) + (c->dist_token ? 1 : 0) + c->reg_tokens;
}

/* How a naming reads a checkpoint without vit.h metadata: */
enum {
    VIT__POOL_FIXED = 0, /* the class token, always */
    VIT__POOL_TIMM       /* timm's global_pool ('token' or 'avg') and fc_norm, from config.json or the tensors */
};

typedef struct vit__vit_naming {
    const char *naming;
    vit__patch_naming patch;           /* the embedding's names */
    const char *pre_norm;              /* the LayerNorm before the blocks, or NULL */
    const char *block_fmt;             /* block l's prefix, printf'd with l */
    const vit__block_naming *block;    /* the blocks' names */
    const char *norm, *norm_alt;       /* the final LayerNorm; norm_alt: timm's fc_norm, or NULL */
    const char *pool;                  /* the attention pool's prefix, or NULL */
    int pool_in_proj;                  /* 1: its q, k and v are one nn.MultiheadAttention (transformers' SigLIP) */
    const char *pre;                   /* a Linear + tanh before the head, or NULL */
    int pre_with_head;                 /* 1: pre sits before the head (torchvision's pre_logits);
                                          0: only a file without a head has it (transformers' pooler) */
    const char *head, *head_dist;      /* the classifier (never under pfx; bias optional), DeiT's second */
    const char *ignore;                /* prefixes of tensors a file may hold that are not the model's
                                          (a CLIP file's text tower), ';'-separated, or NULL */
    int raw_tokens;                    /* 1: the library's token output comes before the final LayerNorm */
    /* checkpoints without vit.h metadata (probe NULL: never inferred) */
    const char *probe;                 /* tensors only this naming has, ';'-separated: any one will do */
    const char *pfx;                   /* what a classifier file puts before every name but the head's */
    const char *variant, *variant_pfx; /* the class a file is, without and with pfx */
    float ln_eps;                      /* LayerNorm epsilon when config.json does not say */
    vit_act act;                       /* the activation when config.json does not say */
    int pool_rule;                     /* VIT__POOL_* */
    vit_pos_resize resize;             /* how the library resizes its position embedding */
    const char *rel_shared;            /* one relative position bias table all blocks share (R, NH), or NULL */
} vit__vit_naming;

#define VIT__HF_CLIP_BLOCK &vit__block_names[6]
#define VIT__HF_BEIT_BLOCK &vit__block_names[9]
/* what only transformers' BEiT (and Data2Vec vision) has: layer scale, a relative position bias per layer or
   shared, the pooler's LayerNorm (use_mean_pooling) */
#define VIT__HF_BEIT_PROBE \
    "encoder.layer.0.lambda_1;" \
    "encoder.layer.0.attention.attention.relative_position_bias.relative_position_bias_table;" \
    "encoder.relative_position_bias.relative_position_bias_table;pooler.layernorm.weight"
static const vit__vit_naming vit__vit_names[] = {
    {"torchvision", {"torchvision", "conv_proj", "class_token", "encoder.pos_embedding", 1, NULL, NULL, 0}, NULL,
     "encoder.layers.encoder_layer_%d.", &vit__block_names[0], "encoder.ln", NULL, NULL, 0, "heads.pre_logits", 1,
     "heads.head", NULL, NULL, 0, "conv_proj.weight", "", "VisionTransformer", "VisionTransformer", 1e-6f, VIT_ACT_GELU,
     VIT__POOL_FIXED, VIT_POS_TORCHVISION, NULL},
    /* timm's Beit: no position embedding but a relative position bias in
       each attention layer (or one shared), q and v biases apart, layer
       scale as gamma_1 and gamma_2; probed before timm's VisionTransformer,
       whose names it shares in part */
    {"beit", {"beit", "patch_embed.proj", "cls_token", "pos_embed", 1, NULL, NULL, 0}, NULL, "blocks.%d.",
     &vit__block_names[7], "norm", "fc_norm", NULL, 0, NULL, 0, "head", NULL, NULL, 0,
     "blocks.0.attn.relative_position_bias_table;rel_pos_bias.relative_position_bias_table;blocks.0.attn.q_bias;"
     "blocks.0.gamma_1", "", "Beit", "Beit", 1e-6f, VIT_ACT_GELU, VIT__POOL_TIMM, VIT_POS_TIMM,
     "rel_pos_bias.relative_position_bias_table"},
    /* timm's Eva as EVA-02 has it: Beit's block names with a position
       embedding, the attention fused or separate, a SwiGLU packed or
       apart, and a rotary embedding that only the architecture's name
       says; never probed, chosen by it */
    {"eva", {"eva", "patch_embed.proj", "cls_token", "pos_embed", 1, NULL, "reg_token", 0}, "norm_pre", "blocks.%d.",
     &vit__block_names[8], "norm", "fc_norm", "attn_pool.", 0, NULL, 0, "head", NULL, NULL, 0, NULL, "", "Eva", "Eva",
     1e-6f, VIT_ACT_GELU, VIT__POOL_TIMM, VIT_POS_TIMM, NULL},
    {"timm", {"timm", "patch_embed.proj", "cls_token", "pos_embed", 1, "dist_token", "reg_token", 0}, "norm_pre",
     "blocks.%d.", &vit__block_names[3], "norm", "fc_norm", "attn_pool.", 0, NULL, 0, "head", "head_dist", NULL, 0,
     "patch_embed.proj.weight", "", "VisionTransformer", "VisionTransformer", 1e-6f, VIT_ACT_GELU, VIT__POOL_TIMM,
     VIT_POS_TIMM, NULL},
    /* transformers' Dinov2WithRegistersModel: Dinov2Model's names, and it
       resizes its position embedding with antialiasing */
    {"hf_dinov2_reg", {"hf_dinov2_reg", "embeddings.patch_embeddings.projection", "embeddings.cls_token",
      "embeddings.position_embeddings", 1, NULL, "embeddings.register_tokens", 0}, NULL, "encoder.layer.%d.",
     &vit__block_names[5], "layernorm", NULL, NULL, 0, NULL, 0, "classifier", NULL, "embeddings.mask_token", 0,
     "embeddings.register_tokens", "", "Dinov2WithRegistersModel", "Dinov2WithRegistersModel", 1e-6f, VIT_ACT_GELU,
     VIT__POOL_FIXED, VIT_POS_TIMM, NULL},
    /* transformers' Dinov2Model, probed before its ViT, whose names it
       shares in part; its mask token only serves masked training */
    {"hf_dinov2",
     {"hf_dinov2", "embeddings.patch_embeddings.projection", "embeddings.cls_token", "embeddings.position_embeddings",
      1, NULL, "embeddings.register_tokens", 0}, NULL, "encoder.layer.%d.", &vit__block_names[5], "layernorm", NULL,
     NULL, 0, NULL, 0, "classifier", NULL, "embeddings.mask_token", 0, "encoder.layer.0.norm1.weight", "",
     "Dinov2Model", "Dinov2Model", 1e-6f, VIT_ACT_GELU, VIT__POOL_FIXED, VIT_POS_HF, NULL},
    /* transformers' BeitModel and BeitForImageClassification: ViTModel's
       names but a key without a bias, a relative position bias table per
       layer or one shared (encoder.relative_position_bias), layer scale as
       lambda_1 and lambda_2, and with use_mean_pooling the mean of the
       patch tokens then pooler.layernorm, else the class token after
       layernorm; probed before its ViT, whose names it shares in part
       (with none of VIT__HF_BEIT_PROBE's four, a BeitModel's names are a
       ViTModel's less the key's bias: it is refused, that bias named). The mask
       token replaces masked patches only when a forward is given
       bool_masked_pos (masked image modelling), never at inference: it
       cannot change an output. */
    {"hf_beit", {"hf_beit", "embeddings.patch_embeddings.projection", "embeddings.cls_token",
      "embeddings.position_embeddings", 1, NULL, NULL, 0}, NULL, "encoder.layer.%d.", VIT__HF_BEIT_BLOCK, "layernorm",
     "pooler.layernorm", NULL, 0, NULL, 0, "classifier", NULL, "embeddings.mask_token;beit.embeddings.mask_token", 0,
     VIT__HF_BEIT_PROBE, "beit.", "BeitModel", "BeitForImageClassification", 1e-12f, VIT_ACT_GELU, VIT__POOL_TIMM,
     VIT_POS_HF, "encoder.relative_position_bias.relative_position_bias_table"},
    /* Data2VecVisionForImageClassification: BEiT's modules under
       data2vec_vision.; its Data2VecVisionModel has BeitModel's names, and
       hf_beit's probe takes it first */
    {"hf_data2vec", {"hf_data2vec", "embeddings.patch_embeddings.projection", "embeddings.cls_token",
      "embeddings.position_embeddings", 1, NULL, NULL, 0}, NULL, "encoder.layer.%d.", VIT__HF_BEIT_BLOCK, "layernorm",
     "pooler.layernorm", NULL, 0, NULL, 0, "classifier", NULL,
     "embeddings.mask_token;data2vec_vision.embeddings.mask_token", 0, VIT__HF_BEIT_PROBE, "data2vec_vision.",
     "Data2VecVisionModel", "Data2VecVisionForImageClassification", 1e-12f, VIT_ACT_GELU, VIT__POOL_TIMM, VIT_POS_HF,
     "encoder.relative_position_bias.relative_position_bias_table"},
    {"transformers", {"transformers", "embeddings.patch_embeddings.projection", "embeddings.cls_token",
      "embeddings.position_embeddings", 1, NULL, NULL, 0}, NULL, "encoder.layer.%d.", &vit__block_names[4], "layernorm",
     NULL, NULL, 0, "pooler.dense", 0, "classifier", NULL, NULL, 0, "embeddings.patch_embeddings.projection.weight",
     "vit.", "ViTModel", "ViTForImageClassification", 1e-12f, VIT_ACT_GELU, VIT__POOL_FIXED, VIT_POS_HF, NULL},
    {"patchify", {"patchify", "patchify.conv_proj", "class_token", "pos_embedding", 1, NULL, NULL, 0}, NULL,
     "encoder.%d.", &vit__block_names[1], "ln", NULL, NULL, 0, NULL, 0, "final", NULL, NULL, 0, NULL, "", NULL, NULL,
     1e-5f, VIT_ACT_RELU, VIT__POOL_FIXED, VIT_POS_TORCHVISION, NULL},
    {"einops", {"einops", "0.projection.0", "0.cls_token", "0.positions", 0, NULL, NULL, 0}, NULL, "1.%d.",
     &vit__block_names[2], "2.1", NULL, NULL, 0, NULL, 0, "2.2", NULL, NULL, 0, NULL, "", NULL, NULL, 1e-5f,
     VIT_ACT_GELU, VIT__POOL_FIXED, VIT_POS_TORCHVISION, NULL},
    /* CLIPVisionModel, or a CLIPModel's image tower and visual_projection
       (its head, no bias): post_layernorm normalises the pooled class
       token only */
    {"hf_clip", {"hf_clip", "vision_model.embeddings.patch_embedding", "vision_model.embeddings.class_embedding",
      "vision_model.embeddings.position_embedding.weight", 0, NULL, NULL, 1}, "vision_model.pre_layrnorm",
     "vision_model.encoder.layers.%d.", VIT__HF_CLIP_BLOCK, "vision_model.post_layernorm", NULL, NULL, 0, NULL, 0,
     "visual_projection", NULL, "text_model.;text_projection.;logit_scale", 1, "vision_model.pre_layrnorm.weight", "",
     "CLIPVisionModel", "CLIPVisionModel", 1e-5f, VIT_ACT_QUICK_GELU, VIT__POOL_FIXED, VIT_POS_HF, NULL},
    /* SiglipVisionModel, or a SiglipModel's image tower: post_layernorm on
       every token, then the attention-pooling head */
    {"hf_siglip",
     {"hf_siglip", "vision_model.embeddings.patch_embedding", NULL, "vision_model.embeddings.position_embedding.weight",
      0, NULL, NULL, 0}, NULL, "vision_model.encoder.layers.%d.", VIT__HF_CLIP_BLOCK, "vision_model.post_layernorm",
     NULL, "vision_model.head.", 1, NULL, 0, NULL, NULL, "text_model.;logit_scale;logit_bias", 0,
     "vision_model.head.probe", "", "SiglipVisionModel", "SiglipVisionModel", 1e-6f, VIT_ACT_GELU_TANH, VIT__POOL_FIXED,
     VIT_POS_HF, NULL}};

static const vit__key vit__vit_keys[] = {
    VIT__INT("image_size", 1, 8192, cfg.image_size),
    VIT__INT("patch_size", 1, 8192, cfg.patch_size),
    VIT__INT("in_channels", 1, 64, cfg.in_channels),
    VIT__INT("hidden_dim", 1, 65536, cfg.dim),
    VIT__INT("num_layers", 1, 1024, cfg.depth),
    VIT__INT("num_heads", 1, 65536, cfg.heads),
    VIT__INT("mlp_dim", 1, 1 << 20, cfg.mlp_dim),
    VIT__INT("num_classes", 0, 1 << 24, cfg.num_classes),
    VIT__INT("representation_size", 0, 1 << 20, cfg.representation_size),
    {"ln_eps", 'p', 0.0, 1.0, offsetof(vit_model, cfg.ln_eps), NULL, NULL, 0, 0},
    VIT__ENUM("act", VIT__ACT_WORDS, cfg.act),
    /* avg: timm's global_pool='avg' with fc_norm (LayerNorm after the pool) */
    VIT__ENUM("pool", "cls,mean,avg,map", cfg.pool),
    {"scale_after_softmax", 'i', 0, 1, offsetof(vit_model, cfg.scale_after_softmax), NULL, "attn_quirk", 0, 0},
    /* what the ViT families add; files without them are classic ViTs */
    VIT__INT_OPT("norm_tokens", 0, 1, 0, cfg.norm_tokens),
    VIT__INT_OPT("class_token", 0, 1, 1, cfg.class_token),
    VIT__INT_OPT("dist_token", 0, 1, 0, cfg.dist_token),
    VIT__INT_OPT("reg_tokens", 0, 64, 0, cfg.reg_tokens),
    VIT__INT_OPT("pos_prefix", -1, 66, -1, cfg.pos_prefix),
    VIT__INT_OPT("patch_bias", 0, 1, 1, cfg.patch_bias),
    VIT__INT_OPT("qkv_bias", 0, 1, 1, cfg.qkv_bias),
    VIT__INT_OPT("pre_norm", 0, 1, 0, cfg.pre_norm),
    VIT__INT_OPT("layer_scale", 0, 1, 0, cfg.layer_scale),
    VIT__INT_OPT("qk_norm", 0, 1, 0, cfg.qk_norm),
    VIT__INT_OPT("glu", 0, 1, 0, cfg.glu),
    VIT__INT_OPT("pos_embed", 0, 1, 1, cfg.pos_embed),
    VIT__INT_OPT("rel_pos", 0, 2, 0, cfg.rel_pos),
    VIT__INT_OPT("rope", 0, 3, 0, cfg.rope),
    VIT__INT_OPT("rope_ref", 0, 8192, 0, cfg.rope_ref),
    {"rope_temp", 'f', 0.0, 1e9, offsetof(vit_model, cfg.rope_temp), NULL, NULL, 1, 0.0},
    {"rope_offset", 'f', -8192.0, 8192.0, offsetof(vit_model, cfg.rope_offset), NULL, NULL, 1, 0.0},
    VIT__INT_OPT("rope_xy", 0, 1, 0, cfg.rope_xy),
    VIT__INT_OPT("rope_half", 0, 1, 0, cfg.rope_half),
    VIT__INT_OPT("pool_heads", 0, 65536, 0, cfg.pool_heads),
    VIT__INT_OPT("pool_prefix", 0, 1, 0, cfg.pool_prefix),
    VIT__INT_OPT("mlp_norm", 0, 1, 0, cfg.mlp_norm),
    VIT__INT_OPT("attn_norm", 0, 1, 0, cfg.attn_norm),
    VIT__KEYS_END};

/* Checks a ViT's config and derives its patch and block params from it;
   also for checkpoints whose config was inferred. */
static vit_result vit__vit_check(vit_model *m, vit__ld *L) {
    vit_config *c = &m->cfg;
    int32_t G, P = vit__prefix(c);
    if (c->image_size % c->patch_size)
        return vit__fail(VIT_ERR_FORMAT, "%s: image_size %d is not a multiple of patch_size %d", L->st.src,
                         (int)c->image_size, (int)c->patch_size);
    if (c->dim % c->heads)
        return vit__fail(VIT_ERR_FORMAT, "%s: hidden_dim %d is not a multiple of num_heads %d", L->st.src, (int)c->dim,
                         (int)c->heads);
    if ((c->pool == VIT_POOL_CLS && !c->class_token) || (c->dist_token && (!c->class_token || c->pool != VIT_POOL_CLS)))
        return vit__fail(VIT_ERR_FORMAT, "%s: pool %s and %s class token%s do not go together", L->st.src,
                         c->pool == VIT_POOL_CLS ? "cls" : "other", c->class_token ? "a" : "no",
                         c->dist_token ? " and a distillation token" : "");
    if (c->pos_prefix < 0) c->pos_prefix = P; /* timm's default: the position embedding covers the prefix */
    if (c->pos_prefix > P)
        return vit__fail(VIT_ERR_FORMAT, "%s: pos_prefix %d is more than the %d prefix tokens", L->st.src,
                         (int)c->pos_prefix, (int)P);
    if (c->pool == VIT_POOL_MAP) c->norm_tokens = 1;
    if (c->pool_heads && (c->pool != VIT_POOL_MAP || c->dim % c->pool_heads))
        return vit__fail(VIT_ERR_FORMAT, "%s: pool_heads %d: %s", L->st.src, (int)c->pool_heads,
                         c->pool != VIT_POOL_MAP ? "only an attention pool has heads of its own"
                                                 : "the hidden size is not a multiple of it");
    if (c->rel_pos && (!c->class_token || P != 1))
        return vit__fail(VIT_ERR_FORMAT,
                         "%s: a relative position bias (rel_pos %d) needs the class token alone before the patches, "
                         "as BEiT's index has it", L->st.src, (int)c->rel_pos);
    if (c->rope && (c->dim / c->heads) % 4)
        return vit__fail(VIT_ERR_FORMAT, "%s: a rotary embedding needs a head size that is a multiple of 4, not %d",
                         L->st.src, (int)(c->dim / c->heads));
    G = c->image_size / c->patch_size;
    if (c->rel_pos && G * G + P > 4097)
        return vit__fail(VIT_ERR_UNSUPPORTED,
                         "%s: a relative position bias over %d tokens; vit.h keeps its (T, T) index and takes at most "
                         "4097 tokens there (a 64 x 64 grid)", L->st.src, (int)(G * G + P));
    if (G * G + P > 16384)
        return vit__fail(VIT_ERR_UNSUPPORTED, "%s: %d tokens is more than the 16384 vit.h supports", L->st.src,
                         (int)(G * G + P));
    m->patch.image_size = c->image_size; m->patch.patch_size = c->patch_size; m->patch.in_channels = c->in_channels;
    m->patch.dim = c->dim; m->patch.class_token = c->class_token; m->patch.pos_embed = c->pos_embed;
    m->patch.dist_token = c->dist_token; m->patch.reg_tokens = c->reg_tokens; m->patch.pos_prefix = c->pos_prefix;
    m->block.dim = c->dim; m->block.heads = c->heads; m->block.mlp_dim = c->mlp_dim;
    m->block.ln_eps = c->ln_eps; m->block.act = c->act; m->block.scale_after_softmax = c->scale_after_softmax;
    m->block.layer_scale = c->layer_scale; m->block.qk_norm = c->qk_norm; m->block.glu = c->glu;
    m->block.mlp_norm = c->mlp_norm; m->block.attn_norm = c->attn_norm;
    return VIT_OK;
}

/* timm's gen_relative_position_index (BEiT) for a G x G grid after the
   class token: idx (T, T), T = G*G + 1, the entry of a (R, NH) bias table,
   R = (2G-1)^2 + 3, that the score of query i and key j adds. Patches p
   and q (row-major in the grid) take their offset (dy, dx) = (y_p - y_q,
   x_p - x_q) as (dy + G-1) (2G-1) + dx + G-1; the three last entries are
   the class token's: R-3 its row to the patches, R-2 the patches' column
   to it, R-1 itself. */
static void vit__relpos_index(int32_t *idx, int32_t G) {
    int32_t T = G * G + 1, R = (2 * G - 1) * (2 * G - 1) + 3, i, j;
    for (i = 0; i < T; i++)
        for (j = 0; j < T; j++) {
            int32_t v = R - 1;
            if (i && j)
                v = ((i - 1) / G - (j - 1) / G + G - 1) * (2 * G - 1) + (i - 1) % G - (j - 1) % G + G - 1;
            else if (i) v = R - 2;
            else if (j) v = R - 3;
            idx[(size_t)i * T + j] = v;
        }
}

/* One rotary table of a G x G grid as vit_k_rope (rope_half: vit_k_rope_half)
   takes it, cs (G*G, 2, HS), computed as timm does in float32. Patch (y,
   x)'s coordinates t0, t1 are (y, x), or (x, y) with rope_xy: AXIAL (timm's
   RotaryEmbeddingCat) counts them from rope_offset, rescaled to rope_ref
   cells if set, and turns pair j < HS/4 by t0 band_j, pair HS/4 + j by t1
   band_j, band_j = 1 / temp^(j / (HS/4)); DINOV3 (RotaryEmbeddingDinoV3)
   centres them, 2 (i + 0.5 + offset) / G - 1, and divides 2 pi t by the
   period temp^(j / (HS/4)) instead; MIXED (RotaryEmbeddingMixed) turns
   pair j by t0 fx[j] + t1 fy[j], this block's and head's learned
   frequencies. */
static void vit__rope_table(float *cs, const vit_config *c, int32_t G, const float *fx, const float *fy) {
    int32_t HS = c->dim / c->heads, H2 = HS / 2, nb = HS / 4, y, x, j, k;
    float temp = c->rope_temp > 0.0f ? c->rope_temp : c->rope == VIT_ROPE_DINOV3 ? 100.0f : 10000.0f;
    for (y = 0; y < G; y++)
        for (x = 0; x < G; x++) {
            float *C = cs + ((size_t)y * G + x) * 2 * HS, *S = C + HS, t[2];
            for (k = 0; k < 2; k++) {
                float i = (float)((k == 0) == !c->rope_xy ? y : x);
                if (c->rope == VIT_ROPE_DINOV3) t[k] = 2.0f * ((i + 0.5f + c->rope_offset) / (float)G) - 1.0f;
                else if (c->rope == VIT_ROPE_MIXED) t[k] = i;
                else t[k] = c->rope_ref ? (i + c->rope_offset) / (float)G * (float)c->rope_ref : i + c->rope_offset;
            }
            for (j = 0; j < H2; j++) {
                float a, e = (float)(j % nb) / (float)nb;
                int32_t i0 = c->rope_half ? j : 2 * j, i1 = c->rope_half ? j + H2 : 2 * j + 1;
                if (c->rope == VIT_ROPE_MIXED) a = t[0] * fx[j] + t[1] * fy[j];
                else if (c->rope == VIT_ROPE_DINOV3) a = 6.28318530717958647692f * t[j / nb] / powf(temp, e);
                else a = t[j / nb] * (1.0f / powf(temp, e));
                C[i0] = C[i1] = cosf(a);
                S[i0] = -sinf(a);
                S[i1] = sinf(a);
            }
        }
}

/* The floats of a model's rotary tables for a G x G grid. */
static size_t vit__rope_floats(const vit_config *c, int32_t G) {
    size_t one = (size_t)G * G * 2 * (c->dim / c->heads);
    return c->rope == VIT_ROPE_MIXED ? one * c->depth * c->heads : one;
}

/* The model's rotary tables for a G x G grid into cs (vit__rope_floats),
   and every block's attention pointed at its own: all the same table, or
   (MIXED) block l's heads' tables, for the tokens after the prefix. */
static void vit__rope_build(vit_model *m, float *cs, int32_t G) {
    const vit_config *c = &m->cfg;
    int32_t l, h, NH = c->heads, HS = c->dim / NH, mixed = c->rope == VIT_ROPE_MIXED;
    size_t one = (size_t)G * G * 2 * HS;
    const float *f = m->rope_freqs.data;
    for (l = 0; mixed && l < c->depth; l++)
        for (h = 0; h < NH; h++)
            vit__rope_table(cs + ((size_t)l * NH + h) * one, c, G, f + ((size_t)l * NH + h) * (HS / 2),
                            f + ((size_t)(c->depth + l) * NH + h) * (HS / 2));
    if (!mixed) vit__rope_table(cs, c, G, NULL, NULL);
    m->rope.data = cs;
    m->rope.ndim = 3;
    m->rope.shape[0] = (int32_t)(vit__rope_floats(c, G) / (2 * (size_t)HS));
    m->rope.shape[1] = 2;
    m->rope.shape[2] = HS;
    for (l = 0; l < c->depth; l++) {
        vit_mha_weights *w = &m->blocks[l].attn;
        w->rope = cs + (mixed ? (size_t)l * NH * one : 0);
        w->rope_first = vit__prefix(c);
        w->rope_n = G * G;
        w->rope_half = c->rope_half;
        w->rope_heads = mixed;
    }
}

/* A relative position bias table (R, NH) named `name`, bound and turned
   to (NH, R) so that each head's entries are one run (vit_k_relpos_add). */
static vit_result vit__relpos_bind(vit__ld *L, vit_tensor *t, const char *name, int32_t R, int32_t NH,
                                   const char *why) {
    vit_tensor f;
    vit_result r;
    int32_t h, k;
    if ((r = vit__bind(L, &f, name, 2, R, NH, 0, 0, why)) != VIT_OK) return r;
    t->name = f.name;
    if ((r = vit__own(L, t, NH, R)) != VIT_OK) return r;
    t->ndim = 2; /* also when R is 1 */
    t->shape[1] = R;
    if (!vit__ld_counting(L))
        for (h = 0; h < NH; h++)
            for (k = 0; k < R; k++) t->data[(size_t)h * R + k] = f.data[(size_t)k * NH + h];
    return VIT_OK;
}

/* The attention pool's weights under prefix; in_proj: q, k and v as one
   nn.MultiheadAttention (rows q, k, v), else q and kv apart. */
static vit_result vit__pool_bind(vit__ld *L, vit_attn_pool_weights *w, const char *prefix, const vit__vit_naming *nm,
                                 const vit_config *c, const char *why) {
    int32_t C = c->dim, H;
    const vit__entry *e;
    char n[256];
    vit_result r;
    if (!nm->pool) return vit__fail(VIT_ERR_FORMAT, "%s: naming %s has no attention pool", vit__ld_src(L), nm->naming);
    memset(w, 0, sizeof *w);
    snprintf(n, sizeof n, "%s%s", prefix, nm->pool_in_proj ? "probe" : "latent");
    if ((r = vit__bind(L, &w->latent, n, 3, 1, 1, C, 0, why)) != VIT_OK) return r;
    if (nm->pool_in_proj) {
        /* views of in_proj: its first C rows are q, the next 2C k and v */
        vit_tensor ipw, ipb;
        snprintf(n, sizeof n, "%sattention.in_proj_weight", prefix);
        L->linear = 1;
        r = vit__bind(L, &ipw, n, 2, 3 * C, C, 0, 0, why);
        L->linear = 0;
        if (r != VIT_OK) return r;
        snprintf(n, sizeof n, "%sattention.in_proj_bias", prefix);
        if ((r = vit__bind(L, &ipb, n, 1, 3 * C, 0, 0, 0, why)) != VIT_OK) return r;
        w->q_w = ipw; w->q_w.shape[0] = C;
        w->q_b = ipb; w->q_b.shape[0] = C;
        w->kv_w = ipw; w->kv_w.shape[0] = 2 * C; w->kv_w.data = ipw.data + (size_t)C * C;
        w->kv_b = ipb; w->kv_b.shape[0] = 2 * C; w->kv_b.data = ipb.data + C;
        snprintf(n, sizeof n, "%sattention.", prefix);
        if ((r = vit__bind_linear(L, &w->proj_w, &w->proj_b, n, "out_proj", C, C, why)) != VIT_OK ||
            (r = vit__bind_ln(L, &w->norm_w, &w->norm_b, prefix, "layernorm", C, why)) != VIT_OK)
            return r;
    } else if ((r = vit__bind_linear(L, &w->q_w, &w->q_b, prefix, "q", C, C, why)) != VIT_OK ||
               (r = vit__bind_linear(L, &w->kv_w, &w->kv_b, prefix, "kv", 2 * C, C, why)) != VIT_OK ||
               (r = vit__bind_linear(L, &w->proj_w, &w->proj_b, prefix, "proj", C, C, why)) != VIT_OK ||
               (r = vit__bind_ln(L, &w->norm_w, &w->norm_b, prefix, "norm", C, why)) != VIT_OK)
        return r;
    /* its MLP's width is its own (PE's pool keeps ratio 4 where the blocks do not) */
    snprintf(n, sizeof n, "%smlp.fc1.weight", prefix);
    e = vit__entry_find(&L->st, n);
    H = e && e->ndim == 2 && e->shape[0] >= 1 && e->shape[0] <= (1 << 20) ? (int32_t)e->shape[0] : c->mlp_dim;
    snprintf(n, sizeof n, "%smlp.", prefix);
    return vit__mlp_bind_w(L, &w->mlp, n, &vit__mlp_names[1], C, H, C, 0, 0, why);
}

static vit_result vit__vit_bind(vit__ld *L, vit_model *m, const void *names) {
    const vit__vit_naming *nm = (const vit__vit_naming *)names;
    const vit_config *c = &m->cfg;
    int32_t feat = c->representation_size ? c->representation_size : c->dim, l, *rel_index = NULL;
    char why[160], rwhy[128], pre[128], fmt[64], n[256];
    vit_tensor shared;
    vit_result r;
    memset(&shared, 0, sizeof shared);
    snprintf(why, sizeof why, "hidden_dim=%d, patch_size=%d, image_size=%d, in_channels=%d", (int)c->dim,
             (int)c->patch_size, (int)c->image_size, (int)c->in_channels);
    if ((r = vit__patch_bind_w(L, &m->patch_w, L->pfx, &nm->patch, &m->patch, c->patch_bias, why)) != VIT_OK) return r;
    if (c->pre_norm && (!nm->pre_norm || (r = vit__bind_ln(L, &m->pre_norm_w, &m->pre_norm_b, L->pfx, nm->pre_norm,
                                                           c->dim, why)) != VIT_OK))
        return nm->pre_norm ? r
                            : vit__fail(VIT_ERR_FORMAT, "%s: naming %s has no LayerNorm before the blocks", L->st.src,
                                        nm->naming);

    /* BEiT's relative position bias: the index every table is read by,
       and the one shared table if it is that */
    if (c->rel_pos) {
        int32_t G = c->image_size / c->patch_size, T = G * G + 1, R = (2 * G - 1) * (2 * G - 1) + 3;
        const char *name = c->rel_pos == 2 ? nm->rel_shared : nm->block->mha_names->rel;
        if (!name)
            return vit__fail(VIT_ERR_FORMAT, "%s: naming %s has no %s relative position bias", L->st.src, nm->naming,
                             c->rel_pos == 2 ? "shared" : "per-block");
        if (!(rel_index = (int32_t *)vit_arena_alloc(&m->arena, (size_t)T * T * sizeof(int32_t)))) return VIT_ERR_OOM;
        if (!vit__ld_counting(L)) vit__relpos_index(rel_index, G);
        snprintf(rwhy, sizeof rwhy, "a grid of %dx%d patches: (2*%d-1)^2 + 3 = %d entries, num_heads=%d", (int)G,
                 (int)G, (int)G, (int)R, (int)c->heads);
        snprintf(n, sizeof n, "%s%s", L->pfx, name);
        if (c->rel_pos == 2 && (r = vit__relpos_bind(L, &shared, n, R, c->heads, rwhy)) != VIT_OK) return r;
    }

    /* blocks: the table is fake memory while counting, so each binds into a copy */
    if (!(m->blocks = (vit_block_weights *)vit_arena_alloc(&m->arena, (size_t)c->depth * sizeof(vit_block_weights))))
        return VIT_ERR_OOM;
    snprintf(why, sizeof why, "hidden_dim=%d, num_heads=%d, mlp_dim=%d", (int)c->dim, (int)c->heads, (int)c->mlp_dim);
    snprintf(fmt, sizeof fmt, "%s%s", L->pfx, nm->block_fmt);
    for (l = 0; l < c->depth; l++) {
        vit_block_weights tmp;
        snprintf(pre, sizeof pre, fmt, (int)l);
        if ((r = vit__block_bind_w(L, &tmp, pre, nm->block, &m->block, c->qkv_bias, why)) != VIT_OK) return r;
        if (c->rel_pos) {
            int32_t G = c->image_size / c->patch_size, R = (2 * G - 1) * (2 * G - 1) + 3;
            snprintf(n, sizeof n, "%s%s%s", pre, nm->block->attn, nm->block->mha_names->rel);
            if (c->rel_pos == 2) tmp.attn.rel_bias = shared;
            else if ((r = vit__relpos_bind(L, &tmp.attn.rel_bias, n, R, c->heads, rwhy)) != VIT_OK) return r;
            tmp.attn.rel_index = rel_index;
            tmp.attn.rel_n = G * G + 1;
        }
        if (!vit__ld_counting(L)) m->blocks[l] = tmp;
    }

    /* the rotary tables, for the grid the model runs at; timm's mixed RoPE learns its frequencies (rope.freqs:
       Eva's own name, which no other naming has) */
    if (c->rope) {
        int32_t G = c->image_size / c->patch_size, HS = c->dim / c->heads;
        float *cs = (float *)vit_arena_alloc(&m->arena, vit__rope_floats(c, G) * sizeof(float));
        if (!cs) return VIT_ERR_OOM;
        snprintf(n, sizeof n, "%srope.freqs", L->pfx);
        snprintf(rwhy, sizeof rwhy, "mixed rotary frequencies: 2 axes, num_layers=%d, num_heads=%d, head size %d / 2",
                 (int)c->depth, (int)c->heads, (int)HS);
        if (c->rope == VIT_ROPE_MIXED &&
            (r = vit__bind(L, &m->rope_freqs, n, 4, 2, c->depth, c->heads, HS / 2, rwhy)) != VIT_OK)
            return r;
        if (!vit__ld_counting(L)) vit__rope_build(m, cs, G);
    }

    /* final LayerNorm, attention pool, pre-logits, heads */
    if ((r = vit__bind_ln(L, &m->norm_w, &m->norm_b, L->pfx, L->norm ? L->norm : nm->norm, c->dim, why)) != VIT_OK)
        return r;
    snprintf(pre, sizeof pre, "%s%s", L->pfx, nm->pool ? nm->pool : "");
    if (c->pool == VIT_POOL_MAP && (r = vit__pool_bind(L, &m->pool_w, pre, nm, c, why)) != VIT_OK) return r;
    if (c->representation_size) {
        if (!nm->pre) return vit__fail(VIT_ERR_FORMAT, "%s: naming %s has no pre_logits layer", L->st.src, nm->naming);
        snprintf(why, sizeof why, "representation_size=%d", (int)c->representation_size);
        if ((r = vit__bind_linear(L, &m->pre_w, &m->pre_b, L->pfx, nm->pre, c->representation_size, c->dim, why)) !=
            VIT_OK)
            return r;
    }
    if (c->num_classes) {
        snprintf(why, sizeof why, "num_classes=%d", (int)c->num_classes);
        snprintf(n, sizeof n, "%s.bias", nm->head);
        if ((r = vit__bind_linear_opt(L, &m->head_w, &m->head_b, "", nm->head, c->num_classes, feat, vit__has(L, n),
                                      why)) != VIT_OK)
            return r;
        if (c->dist_token &&
            (!nm->head_dist || (r = vit__bind_linear(L, &m->head_dist_w, &m->head_dist_b, "", nm->head_dist,
                                                     c->num_classes, c->dim, why)) != VIT_OK))
            return nm->head_dist
                       ? r
                       : vit__fail(VIT_ERR_FORMAT, "%s: naming %s has no distillation head", L->st.src, nm->naming);
    }
    return VIT_OK;
}

/* The attention pool's heads, and the prefix tokens it leaves out (none where it attends to them, timm's Eva). */
static int32_t vit__pool_heads(const vit_config *c) { return c->pool_heads ? c->pool_heads : c->heads; }
static int32_t vit__pool_skip(const vit_config *c) { return c->pool_prefix ? 0 : vit__prefix(c); }

/* Attention pooling (VIT_POOL_MAP) of the Np patch tokens x (B, Np, C)
   into pooled (B, C): the probe's query against every token's key and
   value, per head, the projection, then z + MLP(LayerNorm(z)). */
static vit_result vit__attn_pool(const vit_model *m, vit_arena *a, const float *x, float *pooled, int32_t B,
                                 int32_t Np) {
    const vit_config *c = &m->cfg;
    const vit_attn_pool_weights *w = &m->pool_w;
    int32_t C = c->dim, NH = vit__pool_heads(c), HS = C / NH, bi;
    size_t mark = vit_arena_mark(a);
    vit_tensor q, kv, sc, o, h;
    vit_heads_shape hs; /* one query per head: the probe's */
    vit_mlp_params lp;
    vit__epi e;
    vit_result r;
    void *xs;
    if ((r = vit__fits((double)B * Np * 2 * C, B, "attention pool")) != VIT_OK) return r;
    if ((r = vit__scratch(
             a,
             vit__dense_scratch(vit__dense_scratch(vit__dense_scratch(0, &w->q_w, 1, C), &w->kv_w, B * Np, C),
                                &w->proj_w, B, C),
             &xs)) != VIT_OK)
        return r;
    if ((r = vit__tensor4(a, &q, 2, B, C, 1, 1)) != VIT_OK ||
        (r = vit__tensor4(a, &kv, 3, B, Np, 2 * C, 1)) != VIT_OK ||
        (r = vit__tensor4(a, &sc, 3, B, NH, Np, 1)) != VIT_OK ||
        (r = vit__tensor4(a, &o, 2, B, C, 1, 1)) != VIT_OK || (r = vit__tensor4(a, &h, 2, B, C, 1, 1)) != VIT_OK)
        return r;
    lp.in_dim = C; lp.hidden_dim = w->mlp.fc1_w.shape[0]; lp.out_dim = C; lp.act = c->act; lp.glu = 0;
    lp.norm_eps = 0.0f;
    if (!vit_arena_counting(a)) {
        /* the probe's query, the same for every image */
        vit__dense(q.data, w->latent.data, &w->q_w, w->q_b.data, 1, C, C, xs);
        for (bi = 1; bi < B; bi++) memcpy(q.data + (size_t)bi * C, q.data, (size_t)C * sizeof(float));

        /* keys and values of every token; one query per head attends */
        vit__dense(kv.data, x, &w->kv_w, w->kv_b.data, B * Np, C, 2 * C, xs);
        hs.B = B; hs.NH = NH; hs.Nq = 1; hs.Nk = Np; hs.HS = HS; hs.ldq = C; hs.ldk = hs.ldv = 2 * C;
        hs.scale = 1.0f / sqrtf((float)HS);
        vit_k_scores(sc.data, q.data, kv.data, &hs);
        vit_k_softmax(sc.data, sc.data, B * NH, Np);
        vit_k_attend(o.data, NULL, sc.data, kv.data + C, &hs);

        /* projection, then z + MLP(LayerNorm(z)) */
        vit__dense(pooled, o.data, &w->proj_w, w->proj_b.data, B, C, C, xs);
        vit_k_layernorm(h.data, pooled, w->norm_w.data, w->norm_b.data, B, C, c->ln_eps);
    }
    e.act = VIT__EPI_NONE; e.g = NULL; e.r = pooled; e.ldr = C;
    if ((r = vit__mlp_core(a, &lp, &w->mlp, h.data, lp.in_dim, NULL, o.data, &e, B)) != VIT_OK) return r;
    if (!vit_arena_counting(a)) memcpy(pooled, o.data, (size_t)B * C * sizeof(float));
    vit_arena_rewind(a, mark);
    return VIT_OK;
}

/* tok (B, T, C) after the blocks into pooled (B, C): the class token
   (and DeiT's distillation token into dist), the mean of every token or
   of the patch tokens, or attention pooling; the final LayerNorm before
   the pool on every token (norm_tokens) or after it on the pooled vector
   (LayerNorm is per token, so for a token pool the two agree). */
static vit_result vit__vit_pool(const vit_model *m, vit_arena *a, float *tok, float *pooled, float *dist, int32_t B,
                                int32_t T) {
    const vit_config *c = &m->cfg;
    int32_t C = c->dim, P = vit__prefix(c), first = c->pool == VIT_POOL_MEAN ? 0 : P, bi, l, i;
    if (c->pool == VIT_POOL_MAP) {
        vit_result r;
        vit_tensor patches;
        size_t mark = vit_arena_mark(a);
        int32_t skip = vit__pool_skip(c); /* the tokens the pool attends to: after the prefix, or all */
        if ((r = vit__tensor4(a, &patches, 3, B, T - skip, C, 1)) != VIT_OK) return r;
        if (!vit_arena_counting(a)) {
            vit_k_layernorm(tok, tok, m->norm_w.data, m->norm_b.data, B * T, C, c->ln_eps);
            for (bi = 0; bi < B; bi++)
                memcpy(patches.data + (size_t)bi * (T - skip) * C, tok + ((size_t)bi * T + skip) * C,
                       (size_t)(T - skip) * C * sizeof(float));
        }
        r = vit__attn_pool(m, a, patches.data, pooled, B, T - skip);
        vit_arena_rewind(a, mark);
        return r;
    }
    if (vit_arena_counting(a)) return VIT_OK;
    if (c->norm_tokens) vit_k_layernorm(tok, tok, m->norm_w.data, m->norm_b.data, B * T, C, c->ln_eps);
    for (bi = 0; bi < B; bi++) {
        float *pb = pooled + (size_t)bi * C;
        const float *tb = tok + (size_t)bi * T * C;
        if (c->pool == VIT_POOL_CLS) {
            memcpy(pb, tb, (size_t)C * sizeof(float));
            if (c->dist_token) memcpy(dist + (size_t)bi * C, tb + C, (size_t)C * sizeof(float));
        } else {
            memset(pb, 0, (size_t)C * sizeof(float));
            for (l = first; l < T; l++) vit_k_add(pb, pb, tb + (size_t)l * C, C);
            for (i = 0; i < C; i++) pb[i] /= (float)(T - first);
        }
    }
    if (!c->norm_tokens) {
        vit_k_layernorm(pooled, pooled, m->norm_w.data, m->norm_b.data, B, C, c->ln_eps);
        if (c->dist_token) vit_k_layernorm(dist, dist, m->norm_w.data, m->norm_b.data, B, C, c->ln_eps);
    }
    return VIT_OK;
}

static vit_result vit__vit_run(const vit_model *m, vit_arena *a, const vit_tensor *x, const vit_forward_opts *o,
                               vit_tensor *out) {
    const vit_config *c = &m->cfg;
    int32_t B, C = c->dim, G = c->image_size / c->patch_size, T = G * G + vit__prefix(c), l, i;
    /* No head: the representation (transformers' pooler output) if there
       is a pre-logits layer, else the features. */
    int tokens = o && o->tokens,
        features = !tokens && ((o && o->features) || (c->num_classes == 0 && c->representation_size == 0));
    int32_t width = features ? C : c->num_classes ? c->num_classes : c->representation_size;
    vit_tensor y, tok, nxt, pooled, dist, pre, swap;
    vit_tensor *att = o ? o->attn : NULL;
    vit_result r;
    size_t mark;
    void *xs;
    char s[64];
    if (x->ndim != 4 || x->shape[1] != c->in_channels || x->shape[2] != c->image_size || x->shape[3] != c->image_size)
        return vit__fail(VIT_ERR_SHAPE, "vit_model_forward: input has shape %s, the model expects (B, %d, %d, %d)",
                         vit_tensor_shape_str(x, s, sizeof s), (int)c->in_channels, (int)c->image_size,
                         (int)c->image_size);
    B = x->shape[0];
    r = vit__fits((double)B * T * (3.0 * C > c->mlp_dim ? 3.0 * C : c->mlp_dim), B, "vit_model_forward");
    if (r == VIT_OK && att) r = vit__fits((double)B * c->heads * T * T, B, "vit_model_forward (attention maps)");
    if (r != VIT_OK) return r;

    /* outputs and kept maps first, so that rewinding frees only scratch */
    if (tokens) r = vit__tensor4(a, &y, 3, B, T, C, 1);
    else r = vit__tensor4(a, &y, 2, B, width, 1, 1);
    if (r != VIT_OK) return r;
    if (att)
        for (l = 0; l < c->depth; l++)
            if ((r = vit__tensor4(a, &att[l], 4, B, c->heads, T, T)) != VIT_OK) return r;
    mark = vit_arena_mark(a);

    /* patch embedding: (B, Cin, H, W) -> (B, T, C), prefix tokens first;
       CLIP's LayerNorm before the blocks */
    if ((r = vit_patch_forward(a, &m->patch, &m->patch_w, x, &tok, NULL)) != VIT_OK) return r;
    if ((r = vit__tensor4(a, &nxt, 3, B, T, C, 1)) != VIT_OK) return r;
    if (c->pre_norm && !vit_arena_counting(a))
        vit_k_layernorm(tok.data, tok.data, m->pre_norm_w.data, m->pre_norm_b.data, B * T, C, c->ln_eps);

    /* L x (LN -> MHSA -> residual -> LN -> MLP -> residual) */
    for (l = 0; l < c->depth; l++) {
        if ((r = vit__block_core(a, &m->block, &m->blocks[l], tok.data, nxt.data, att ? att[l].data : NULL, B, T)) !=
            VIT_OK)
            return r;
        swap = tok; tok = nxt; nxt = swap;
    }

    /* every token, after the final LayerNorm where the trunk has it */
    if (tokens) {
        if (!vit_arena_counting(a)) {
            if (!((const vit__vit_naming *)vit__naming_of(m))->raw_tokens &&
                (c->pool == VIT_POOL_CLS || c->pool == VIT_POOL_MAP || c->norm_tokens))
                vit_k_layernorm(y.data, tok.data, m->norm_w.data, m->norm_b.data, B * T, C, c->ln_eps);
            else
                memcpy(y.data, tok.data, (size_t)B * T * C * sizeof(float));
        }
        vit_arena_rewind(a, mark);
        *out = y;
        return VIT_OK;
    }

    /* pool */
    if ((r = vit__tensor4(a, &pooled, 2, B, C, 1, 1)) != VIT_OK ||
        (r = vit__tensor4(a, &dist, 2, B, C, 1, 1)) != VIT_OK)
        return r;
    if ((r = vit__vit_pool(m, a, tok.data, pooled.data, dist.data, B, T)) != VIT_OK) return r;

    /* DeiT: the features are the two tokens' mean, the logits the two
       heads' mean */
    if (c->dist_token) {
        vit_tensor y2;
        if ((r = vit__tensor4(a, &y2, 2, B, c->num_classes ? c->num_classes : 1, 1, 1)) != VIT_OK) return r;
        if (!vit_arena_counting(a) && features)
            for (i = 0; i < B * C; i++) pooled.data[i] = (pooled.data[i] + dist.data[i]) / 2.0f;
        else if (!features && c->num_classes) {
            if ((r = vit__scratch(a, vit__dense_scratch(vit__dense_scratch(0, &m->head_w, B, C), &m->head_dist_w, B, C),
                                  &xs)) != VIT_OK)
                return r;
            if (!vit_arena_counting(a)) {
                vit__dense(y.data, pooled.data, &m->head_w, m->head_b.data, B, C, c->num_classes, xs);
                vit__dense(y2.data, dist.data, &m->head_dist_w, m->head_dist_b.data, B, C, c->num_classes, xs);
                for (i = 0; i < B * c->num_classes; i++) y.data[i] = (y.data[i] + y2.data[i]) / 2.0f;
            }
            vit_arena_rewind(a, mark);
            *out = y;
            return VIT_OK;
        }
    }

    /* head: optional pre_logits (Linear + tanh), then the classifier */
    if (!features && c->representation_size) {
        if ((r = vit__tensor4(a, &pre, 2, B, c->representation_size, 1, 1)) != VIT_OK) return r;
        if ((r = vit__scratch(a, vit__dense_scratch(0, &m->pre_w, B, C), &xs)) != VIT_OK) return r;
        if (!vit_arena_counting(a)) {
            vit__dense(pre.data, pooled.data, &m->pre_w, m->pre_b.data, B, C, c->representation_size, xs);
            vit_k_tanh(pre.data, pre.data, B * c->representation_size);
        }
        pooled = pre;
    }
    if (!features && c->num_classes &&
        (r = vit__scratch(a, vit__dense_scratch(0, &m->head_w, B, pooled.shape[1]), &xs)) != VIT_OK)
        return r;
    if (!vit_arena_counting(a)) {
        if (features || !c->num_classes) memcpy(y.data, pooled.data, (size_t)B * width * sizeof(float));
        else vit__dense(y.data, pooled.data, &m->head_w, m->head_b.data, B, pooled.shape[1], c->num_classes, xs);
    }
    vit_arena_rewind(a, mark);
    *out = y;
    return VIT_OK;
}

/* The preprocessing line: what vit_model_preprocess makes of the file's
   metadata, or why it refuses it (vit_last_error left as it was). */
static void vit__vit_describe_pp(const vit_model *m, vit__buf *b) {
    char saved[sizeof vit__err];
    vit_preprocess p;
    int own =
        vit_model_meta(m, "input_mean") || vit_model_meta(m, "input_resize") || vit_model_meta(m, "input_crop_pct");
    memcpy(saved, vit__err, sizeof saved);
    if (vit_model_preprocess(m, &p) != VIT_OK) vit__bprintf(b, "  images: none (%s)\n", vit__err);
    else {
        int32_t c, C = m->cfg.in_channels < 3 ? m->cfg.in_channels : 3;
        vit__bprintf(b, "  images: resize %s %d, %s, crop %d%s, mean", p.squash ? "both sides to" : "the short side to",
                     (int)p.resize, p.resample == VIT_RESAMPLE_BICUBIC ? "bicubic" : "bilinear", (int)p.crop,
                     p.crop_floor ? " (offset rounded down)" : "");
        for (c = 0; c < C; c++) vit__bprintf(b, " %g", (double)p.mean[c]);
        vit__bprintf(b, ", std");
        for (c = 0; c < C; c++) vit__bprintf(b, " %g", (double)p.std[c]);
        vit__bprintf(b, "%s\n", own ? "" : " (torchvision's ViT transform: the file names none)");
    }
    memcpy(vit__err, saved, sizeof saved);
}

/* The family a ViT's structure belongs to, from the pieces only that family
   has: a file says what it holds, not where it came from (its naming is
   what it holds too: a BEiT's names without a relative position bias). */
static const char *vit__vit_family(const vit_config *c, const vit__vit_naming *nm) {
    if (c->rope == VIT_ROPE_DINOV3)
        return c->reg_tokens ? "DINOv3 (rotary position embeddings in halves, register tokens, layer scale)"
                             : "ViT with DINOv3's rotary position embeddings";
    if (c->rope == VIT_ROPE_MIXED) return "RoPE-Mixed ViT (rotary frequencies learned per block and head)";
    if (c->rope && c->pool == VIT_POOL_MAP)
        return "Perception Encoder (rotary position embeddings, a LayerNorm before the blocks, attention pooling)";
    if (c->rope && c->rope_xy) return "RoPE-Axial ViT (rotary position embeddings on an xy grid)";
    if (c->rope && !c->glu) return "ViT with EVA-02's rotary position embeddings";
    if (c->rope && c->attn_norm)
        return "EVA-02 CLIP tower (rotary position embeddings, LayerNorms inside the attention and the SwiGLU)";
    if (c->rope && c->mlp_norm) return "EVA-02 (rotary position embeddings, SwiGLU with a LayerNorm inside)";
    if (c->rope) return "EVA-02 (rotary position embeddings, SwiGLU)";
    if (c->rel_pos) return c->rel_pos == 2 ? "BEiT (a relative position bias shared by the blocks)"
                                           : "BEiT (a relative position bias in every block)";
    if (nm->rel_shared) return c->pos_embed ? "BEiT (a position embedding, no relative position bias)"
                                            : "BEiT (no position embedding and no relative position bias)";
    if (c->dist_token) return "DeiT distilled (a distillation token and head)";
    if (c->pool == VIT_POOL_MAP) return "SigLIP (an attention-pool head)";
    if (c->pre_norm) return c->act == VIT_ACT_QUICK_GELU ? "CLIP, OpenAI's (LayerNorm before the blocks, QuickGELU)"
                                                         : "CLIP (LayerNorm before the blocks)";
    if (c->glu) return "DINOv2-giant (SwiGLU)";
    if (c->layer_scale && c->reg_tokens) return "DINOv2 with registers (layer scale, register tokens)";
    if (c->layer_scale && c->patch_size == 14) return "DINOv2 (layer scale, patch 14)";
    if (c->layer_scale) return "DeiT III (layer scale)";
    if (c->qk_norm) return "ViT with qk-norm";
    if (!c->class_token) return "ViT without a class token (average pooling)";
    return "ViT (torchvision, timm, transformers, DeiT)";
}

static void vit__vit_describe(const vit_model *m, vit__buf *b) {
    static const char *const pools[] = {"class token", "mean of all tokens", "mean of the patch tokens",
                                        "attention pooling"};
    const vit_config *c = &m->cfg;
    int32_t G = c->image_size / c->patch_size, P = vit__prefix(c);
    vit__bprintf(b, "  family: %s\n", vit__vit_family(c, (const vit__vit_naming *)vit__naming_of(m)));
    vit__bprintf(b, "  image %dx%d, %d channels, patch %d, %d tokens (%d patches", (int)c->image_size,
                 (int)c->image_size, (int)c->in_channels, (int)c->patch_size, (int)(G * G + P), (int)(G * G));
    if (P)
        vit__bprintf(b, " after %d prefix tokens:%s%s", (int)P, c->class_token ? " class" : "",
                     c->dist_token ? " distillation" : "");
    if (c->reg_tokens) vit__bprintf(b, " %d registers", (int)c->reg_tokens);
    vit__bprintf(b, ")\n  %d layers, hidden %d, %d heads, mlp %d (%s%s%s), LayerNorm eps %g%s%s%s%s%s\n",
                 (int)c->depth, (int)c->dim, (int)c->heads, (int)c->mlp_dim, vit__act_name(c->act),
                 c->glu ? ", gated" : "", c->mlp_norm ? ", LayerNorm inside" : "", (double)c->ln_eps,
                 c->scale_after_softmax ? ", attention scaled after the softmax" : "",
                 c->layer_scale ? ", layer scale" : "", c->qk_norm ? ", qk-norm" : "",
                 c->attn_norm ? ", LayerNorm inside the attention" : "",
                 c->pre_norm ? ", LayerNorm before the blocks" : "");
    if (c->rel_pos || !c->pos_embed || c->rope)
        vit__bprintf(b, "  positions: %s%s%s\n", c->pos_embed ? "a position embedding" : "no position embedding",
                     c->rel_pos == 2   ? ", one relative position bias table all blocks share"
                     : c->rel_pos == 1 ? ", a relative position bias table in every block"
                                       : "",
                     c->rope == VIT_ROPE_DINOV3  ? ", DINOv3's rotary embeddings on the patches' q and k"
                     : c->rope == VIT_ROPE_MIXED ? ", rotary embeddings of learned frequencies on the patches' q and k"
                     : c->rope                   ? ", rotary embeddings on the patches' q and k"
                                                 : "");
    vit__bprintf(b, "  pool: %s%s, classes %d, representation %d\n", pools[c->pool],
                 c->norm_tokens && c->pool != VIT_POOL_MAP ? " (normalised first)" : "", (int)c->num_classes,
                 (int)c->representation_size);
    vit__bprintf(b, "  input (B, %d, %d, %d)\n", (int)c->in_channels, (int)c->image_size, (int)c->image_size);
    vit__vit_describe_pp(m, b);
}

static vit_result vit__vit_input(const vit_model *m, int32_t B, int32_t n, int32_t w, int32_t *ndim, int32_t *shape) {
    (void)n; (void)w;
    return vit__shape(ndim, shape, 4, B, m->cfg.in_channels, m->cfg.image_size, m->cfg.image_size);
}

/* ---- model: loading ---- */

/* The registry (VIT_KINDS) as a table of each kind's hooks. */
typedef struct vit__kind_def {
    const char *name;                      /* the file's "kind" */
    const vit__key *keys;                  /* the metadata it reads */
    const void *names;                     /* its naming rows, each led by its name */
    size_t names_size;                     /* bytes of one row */
    int n_names;                           /* rows */
    vit_result (*check)(vit_model *m, vit__ld *L);
    vit_result (*bind)(vit__ld *L, vit_model *m, const void *names);
    vit_result (*run)(const vit_model *m, vit_arena *a, const vit_tensor *x, const vit_forward_opts *o,
                      vit_tensor *out);
    void (*describe)(const vit_model *m, vit__buf *b);
    vit_result (*input)(const vit_model *m, int32_t B, int32_t n, int32_t w, int32_t *ndim, int32_t *shape);
} vit__kind_def;

static const vit__kind_def vit__kinds[] = {
#define VIT__KIND_DEF(e, name, str, fields) \
    {str, \
     vit__##name##_keys, \
     vit__##name##_names, \
     sizeof vit__##name##_names[0], \
     (int)(sizeof vit__##name##_names / sizeof vit__##name##_names[0]), \
     vit__##name##_check, \
     vit__##name##_bind, \
     vit__##name##_run, \
     vit__##name##_describe, \
     vit__##name##_input},
    VIT_KINDS(VIT__KIND_DEF)
#undef VIT__KIND_DEF
};
/* One entry per enum value, in order (both come from VIT_KINDS). */
typedef char vit__kinds_match_the_enum[sizeof vit__kinds / sizeof vit__kinds[0] == VIT_KIND_COUNT ? 1 : -1];

/* Strings files written before vit.h 0.2 use, named after the tutorials
   the modules came from; read as the names that say what they are. */
static const struct { const char *old, *now; } vit__kind_alias[] = {{"seed002_classifier", "sdsa_classifier"}};
static const struct { const char *kind, *old, *now;
} vit__naming_alias[] = {{"vit", "seed001", "patchify"},
                         {"vit", "seed004", "einops"},
                         {"encoder_block", "seed001", "patchify"},
                         {"encoder_block", "seed004", "einops"},
                         {"mha", "seed000", "proj_qkv"},
                         {"mha", "seed004", "einops"},
                         {"mlp", "seed001", "seq_layers"},
                         {"mlp", "seed002", "seq_mlp"},
                         {"mlp", "seed004", "einops"},
                         {"patch_embed", "seed000", "conv_proj"},
                         {"patch_embed", "seed001", "conv_proj"},
                         {"patch_embed", "seed004", "einops"},
                         {"sdpa", "seed000", "default"},
                         {"se", "seed000", "torchvision"},
                         {"sdsa", "seed002", "default"},
                         {"sdsa_classifier", "seed002", "default"},
                         {"emsa", "seed003", "default"},
                         {"shuffle", "seed003", "default"},
                         {"sge", "seed003", "default"},
                         {"aft", "seed003", "default"},
                         {"outlook", "seed003", "default"}};

VITDEF const char *vit_kind_name(vit_kind k) {
    return (int)k >= 0 && (int)k < VIT_KIND_COUNT ? vit__kinds[k].name : "unknown";
}

/* Row i of a kind's naming table. */
static const void *vit__naming_row(const vit__kind_def *d, int i) {
    return (const char *)d->names + (size_t)i * d->names_size;
}

static const void *vit__naming_of(const vit_model *m) {
    const vit__kind_def *d = &vit__kinds[m->kind];
    return vit__find_naming(d->names, d->names_size, (size_t)d->n_names, m->naming);
}

/* One key's value from the metadata, checked against its row. */
static vit_result vit__read_key(vit__ld *L, const vit__key *k, vit_model *m) {
    const char *s = vit__meta(&L->st, k->key), *name = k->key, *w;
    char *end, *dst = (char *)m + k->off;

    /* absent: the old key's value, else the default when the key is optional */
    if (!s && k->old && (s = vit__meta(&L->st, k->old)) != NULL) name = k->old;
    if (!s && k->opt) {
        int32_t i = (int32_t)k->def;
        float f = (float)k->def;
        if (k->type == 'f' || k->type == 'p') memcpy(dst, &f, sizeof f);
        else memcpy(dst, &i, sizeof i);
        return VIT_OK;
    }
    if (!s)
        return vit__fail(VIT_ERR_MISSING, "%s: metadata lacks '%s'; hint: re-export with tools/export.py", L->st.src,
                         k->key);

    /* parsed by its type, checked against its range */
    if (k->type == 'i') {
        long v = strtol(s, &end, 10);
        int32_t i;
        if (end == s || *end || v < k->lo || v > k->hi)
            return vit__fail(VIT_ERR_FORMAT, "%s: metadata '%s' = \"%s\" is not an integer in %.0f..%.0f", L->st.src,
                             name, s, k->lo, k->hi);
        i = (int32_t)v; /* in range now */
        memcpy(dst, &i, sizeof i);
    } else if (k->type == 'f' || k->type == 'p') {
        double v = strtod(s, &end);
        float f;
        int open = k->type == 'p';
        if (end == s || *end || !(open ? v > k->lo && v < k->hi : v >= k->lo && v <= k->hi))
            return vit__fail(VIT_ERR_FORMAT, "%s: metadata '%s' = \"%s\" is not a number in %s%g, %g%s", L->st.src,
                             name, s, open ? "(" : "[", k->lo, k->hi, open ? ")" : "]");
        if (fabs(v) > FLT_MAX) /* converting it to float would be undefined */
            return vit__fail(VIT_ERR_FORMAT, "%s: metadata '%s' = \"%s\" is infinite as a float", L->st.src, name, s);
        f = (float)v;
        if (v != 0.0 && f == 0.0f)
            return vit__fail(VIT_ERR_FORMAT, "%s: metadata '%s' = \"%s\" is 0 as a float", L->st.src, name, s);
        memcpy(dst, &f, sizeof f);
    } else {
        /* 'e': the word's index in words */
        size_t n = strlen(s);
        int32_t i = 0;
        for (w = k->words; *w; i++) {
            size_t len = strcspn(w, ",");
            if (len == n && !memcmp(w, s, n)) break;
            w += len + (w[len] == ',');
        }
        if (!*w)
            return vit__fail(VIT_ERR_FORMAT, "%s: metadata '%s' = \"%s\" is not one of %s", L->st.src, name, s,
                             k->words);
        memcpy(dst, &i, sizeof i);
    }
    return VIT_OK;
}

static vit_result vit__read_keys(vit__ld *L, const vit__key *keys, vit_model *m) {
    vit_result r;
    for (; keys->key; keys++)
        if ((r = vit__read_key(L, keys, m)) != VIT_OK) return r;
    return VIT_OK;
}

/* The kind and naming of a file with vit.h metadata (older strings read
   as today's), then its config from the kind's keys, checked. */
static vit_result vit__read_config(vit__ld *L) {
    vit_model *m = L->m;
    vit_result r;
    const char *kind = vit__meta(&L->st, "kind"), *naming = vit__meta(&L->st, "naming");
    const vit__kind_def *d = NULL;
    size_t i;
    int k;
    for (i = 0; kind && i < sizeof vit__kind_alias / sizeof vit__kind_alias[0]; i++)
        if (!strcmp(kind, vit__kind_alias[i].old)) kind = vit__kind_alias[i].now;
    for (k = 0; kind && k < VIT_KIND_COUNT && !d; k++)
        if (!strcmp(kind, vit__kinds[k].name)) d = &vit__kinds[k];
    if (!d)
        return vit__fail(VIT_ERR_UNSUPPORTED, "%s: kind '%s' is not one vit.h runs", L->st.src, kind ? kind : "(none)");
    m->kind = (vit_kind)(d - vit__kinds);
    for (i = 0; naming && i < sizeof vit__naming_alias / sizeof vit__naming_alias[0]; i++)
        if (!strcmp(kind, vit__naming_alias[i].kind) && !strcmp(naming, vit__naming_alias[i].old))
            naming = vit__naming_alias[i].now;
    /* no naming: the kind's first */
    if (!naming) naming = *(const char *const *)d->names;
    if (!vit__find_naming(d->names, d->names_size, (size_t)d->n_names, naming)) {
        char known[256];
        size_t u = 0;
        for (k = 0; k < d->n_names && u < sizeof known; k++)
            u += (size_t)snprintf(known + u, sizeof known - u, "%s%s", k ? ", " : "",
                                  *(const char *const *)vit__naming_row(d, k));
        return vit__fail(VIT_ERR_UNSUPPORTED, "%s: unknown %s naming '%s' (vit.h reads %s)", L->st.src, d->name, naming,
                         known);
    }
    snprintf(m->naming, sizeof m->naming, "%s", naming);
    if ((r = vit__read_keys(L, d->keys, m)) != VIT_OK) return r;
    return d->check(m, L);
}

/* Keeps the file's metadata (labels, preprocessing, training record) in the
   weights arena for vit_model_meta. */
/* A copy of s in the weights arena (NULL while counting). */
static vit_result vit__keep_str(vit__ld *L, const char *s, const char **out) {
    size_t n = strlen(s) + 1;
    char *dst = (char *)vit_arena_alloc(&L->m->arena, n);
    if (!dst) return VIT_ERR_OOM;
    if (vit_arena_counting(&L->m->arena)) dst = NULL;
    else memcpy(dst, s, n);
    *out = dst;
    return VIT_OK;
}

/* Keeps the file's metadata (labels, preprocessing, training record), then
   what a config.json added (input_mean, ...), in the weights arena for
   vit_model_meta; the class names for vit_model_label; the inferred config. */
static vit_result vit__bind_meta(vit__ld *L) {
    vit_model *m = L->m;
    int32_t i, n = L->st.nmeta + L->nx;
    int counting = vit_arena_counting(&m->arena);
    const char **meta = (const char **)vit_arena_alloc(&m->arena, (size_t)(2 * n + 1) * sizeof(char *)), *s;
    vit_result r;
    if (!meta) return VIT_ERR_OOM;
    for (i = 0; i < 2 * n; i++) {
        int32_t k = i / 2;
        const char *src = k < L->st.nmeta ? (i % 2 ? L->st.mv[k] : L->st.mk[k])
                                          : (i % 2 ? L->xv[k - L->st.nmeta] : L->xk[k - L->st.nmeta]);
        if ((r = vit__keep_str(L, src, &s)) != VIT_OK) return r;
        if (!counting) meta[i] = s;
    }
    m->meta = counting ? NULL : meta;
    m->n_meta = counting ? 0 : n;
    if (L->n_labels) {
        const char **lab = (const char **)vit_arena_alloc(&m->arena, (size_t)L->n_labels * sizeof(char *));
        if (!lab) return VIT_ERR_OOM;
        for (i = 0; i < L->n_labels; i++) {
            if ((r = vit__keep_str(L, L->labels[i], &s)) != VIT_OK) return r;
            if (!counting) lab[i] = s;
        }
        m->labels = counting ? NULL : lab;
        m->n_labels = counting ? 0 : L->n_labels;
    }
    if (L->inferred[0]) {
        if ((r = vit__keep_str(L, L->inferred, &s)) != VIT_OK) return r;
        m->inferred = s;
    }
    return VIT_OK;
}

VITDEF const char *vit_model_meta(const vit_model *m, const char *key) {
    int32_t i;
    for (i = 0; m && key && i < m->n_meta; i++)
        if (!strcmp(m->meta[2 * i], key)) return m->meta[2 * i + 1];
    return NULL;
}

VITDEF const char *vit_model_label(const vit_model *m, int32_t k) {
    return m && m->labels && k >= 0 && k < m->n_labels ? m->labels[k] : NULL;
}

/* Binds every tensor m->kind needs. Run twice: first into a counting arena
   (checks everything, sizes the arena), then for real. */
static vit_result vit__bind_all(vit__ld *L) {
    vit_model *m = L->m;
    vit_result r;
    m->n_params = 0;
    memset(m->n_kept, 0, sizeof m->n_kept);
    if ((r = vit__bind_meta(L)) != VIT_OK) return r;
    return vit__kinds[m->kind].bind(L, m, vit__naming_of(m));
}

/* ---- model: checkpoints without vit.h metadata ---- */
/* A timm, transformers or torchvision ViT checkpoint: the naming from the
   tensor names, the sizes from the shapes, the heads from the caller, a
   config.json or the standard ViT sizes. Binding then checks every tensor
   as for an exported file. */

/* The 2-D shape (rows, cols) of tensor `name`, or a message naming it. */
static vit_result vit__infer_2d(vit__ld *L, const char *name, const char *what, int32_t *rows, int32_t *cols) {
    const vit__entry *e = vit__entry_find(&L->st, name);
    char got[96];
    if (!e) return vit__fail(VIT_ERR_MISSING, "%s: missing tensor '%s' (%s)", L->st.src, name, what);
    vit__shape_text(got, sizeof got, e->ndim, e->shape);
    if (e->ndim != 2 || e->shape[0] < 1 || e->shape[0] > (1 << 24) || e->shape[1] < 1)
        return vit__fail(VIT_ERR_SHAPE, "%s: tensor '%s' has shape %s, expected a (out, in) matrix (%s)", L->st.src,
                         name, got, what);
    *rows = (int32_t)e->shape[0];
    if (cols) *cols = (int32_t)e->shape[1];
    return VIT_OK;
}

/* The config.json to read: opts' text or path, else the one beside `path`
   (missing is fine). c->st.src is set when there is one. */
static vit_result vit__cfg_load(vit__cfg *c, vit_arena *text_arena, const vit_load_opts *o, const char *path,
                                char *name, size_t name_size) {
    const char *text = NULL;
    size_t n = 0;
    (void)text_arena; /* unused under VIT_NO_STDIO */
    if (o && o->config_text) {
        snprintf(name, name_size, "%s", o->config_path ? o->config_path : "config.json");
        text = o->config_text;
        n = o->config_size;
    } else if (o && o->config_path) {
#ifndef VIT_NO_STDIO
        vit_result r;
        snprintf(name, name_size, "%s", o->config_path);
        if ((r = vit__read_file(o->config_path, (size_t)16 << 20, text_arena, &n)) != VIT_OK) return r;
        text = (const char *)text_arena->base;
#else
        return vit__fail(VIT_ERR_UNSUPPORTED, "%s: config_path needs file I/O (built with VIT_NO_STDIO)",
                         o->config_path);
#endif
    } else if (path && !(o && o->no_config_search)) {
#ifndef VIT_NO_STDIO
        /* "config.json" in the model file's directory, as a hub download has it. */
        size_t d = strlen(path);
        FILE *f;
        while (d > 0 && path[d - 1] != '/' && path[d - 1] != '\\') d--;
        if (d + 12 > name_size)
            return vit__fail(VIT_ERR_ARG, "%s: no room for the name of config.json beside it", path);
        memcpy(name, path, d);
        memcpy(name + d, "config.json", 12);
        if (!(f = fopen(name, "rb"))) return VIT_OK;
        fclose(f);
        {
            vit_result r = vit__read_file(name, (size_t)16 << 20, text_arena, &n);
            if (r != VIT_OK) return r;
            text = (const char *)text_arena->base;
        }
#endif
    }
    if (!text) return VIT_OK;
    c->st.src = name;
    return vit__cfg_parse(c, text, n);
}

static const struct { int32_t dim, heads; } vit__std_heads[] = {
    {192, 3}, {384, 6}, {512, 8}, {768, 12}, {1024, 16}, {1152, 16}, {1280, 16}, {1408, 16}, {1536, 24}, {1664, 16}};

/* An activation's name in a config.json (transformers' hidden_act, timm's
   act_layer) as a vit_act; -1 when vit.h has none. */
static int vit__act_of(const char *s) {
    static const struct { const char *name; vit_act act;
    } t[] = {{"gelu", VIT_ACT_GELU},           {"relu", VIT_ACT_RELU},
             {"gelu_tanh", VIT_ACT_GELU_TANH}, {"gelu_pytorch_tanh", VIT_ACT_GELU_TANH},
             {"gelu_new", VIT_ACT_GELU_TANH},  {"quick_gelu", VIT_ACT_QUICK_GELU},
             {"silu", VIT_ACT_SILU},           {"swish", VIT_ACT_SILU}};
    size_t i;
    for (i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(s, t[i].name)) return (int)t[i].act;
    return -1;
}

/* ---- model: the architectures a config.json names ----
   A config.json's timm "architecture", or transformers' "model_type" and
   "architectures", is the authority on what a checkpoint computes: rotary
   position embeddings, a norm's placement or an activation have no
   tensors, so a file's tensor names cannot tell such models apart. Each
   row is a name pattern ('*' matches any run of characters); the first
   row that matches decides. A row vit.h runs gives the naming the file's
   tensors must follow and the defaults the config leaves out; a refusing
   row says what the name is and what vit.h lacks for it. A name no row
   matches is refused; without any such name in the config, the tensor
   names decide (the timm list: tools/arch_reference.py walks
   timm.list_models() against this table). */
typedef struct vit__arch {
    const char *pattern;    /* timm's architecture, or transformers' model_type */
    const char *classes;    /* transformers' architectures[0] it may have, ';'-separated, "" for absent; NULL: any */
    const char *naming;     /* the tensor naming its files follow; NULL: refused */
    const char *what;       /* what it is; for a refused name, also what vit.h lacks */
    float ln_eps;           /* LayerNorm eps its config.json leaves out; 0: the naming's */
    int act;                /* its activation (vit_act); -1: the naming's */
    const struct vit__eva_args *eva; /* what its timm entrypoint sets that has no tensors, or NULL */
} vit__arch;

/* An Eva entrypoint's settings that leave no tensors: its rotary
   embedding (vit_config's rope fields) and its attention pool's heads. */
typedef struct vit__eva_args {
    int rope, ref;          /* vit_rope; timm's ref_feat_shape (0: none) */
    float temp, offset;     /* rope_temperature; rope_grid_offset */
    int xy, half;           /* rope_grid_indexing 'xy'; rope_rotate_half */
    int pool_heads;         /* attn_pool_num_heads (0: the model's) */
    int attn_rope;          /* 1: attn_type 'rope' (timm's AttentionRope: one qkv bias), 0: EvaAttention's q and v
                               biases */
} vit__eva_args;

/* EVA-02 and timm's own RoPE ViTs (vit_*_rope_reg*_gap_256): RotaryEmbeddingCat on a 16 x 16 reference grid */
static const vit__eva_args vit__eva02 = {VIT_ROPE_AXIAL, 16, 10000.0f, 0.0f, 0, 0, 0, 0};
/* NAVER's RoPE-Axial and RoPE-Mixed ViTs (Heo et al.), with an absolute position embedding too in *_ape_* */
static const vit__eva_args vit__rope_axial = {VIT_ROPE_AXIAL, 0, 100.0f, 0.0f, 1, 0, 0, 1};
static const vit__eva_args vit__rope_mixed = {VIT_ROPE_MIXED, 0, 10.0f, 0.0f, 1, 0, 0, 1};
/* DINOv3 and LingBot-Vision: RotaryEmbeddingDinoV3, centred coordinates, pairs in halves */
static const vit__eva_args vit__dinov3 = {VIT_ROPE_DINOV3, 0, 100.0f, 0.0f, 0, 1, 0, 0};
/* Perception Encoder core towers: xy grids counted from 1 (from 0 in gigantic), an 8-head attention pool */
static const vit__eva_args vit__pe24 = {VIT_ROPE_AXIAL, 24, 10000.0f, 1.0f, 1, 0, 8, 1};
static const vit__eva_args vit__pe14 = {VIT_ROPE_AXIAL, 14, 10000.0f, 1.0f, 1, 0, 8, 1};
static const vit__eva_args vit__pe32 = {VIT_ROPE_AXIAL, 32, 10000.0f, 0.0f, 1, 0, 8, 1};

#define VIT__EVA "timm's Eva class: "
static const vit__arch vit__timm_archs[] = {
    /* timm's Eva, Beit, VisionTransformerRelPos, VisionTransformerSAM,
       NaFlexVit and hybrid classes, some under vit_ names */
    /* Perception Encoder core towers (Meta): AttentionRope's rotary embedding, a LayerNorm before the blocks, an
       attention pool over every token, the projection as the head; the language and spatial towers end without
       a LayerNorm */
    {"vit_pe_core_tiny_patch16_384", NULL, "eva", "a Perception Encoder core tower (" VIT__EVA "rotary position "
     "embeddings, attention pooling)", 1e-5f, -1, &vit__pe24},
    {"vit_pe_core_small_patch16_384", NULL, "eva", "a Perception Encoder core tower (" VIT__EVA "rotary position "
     "embeddings, attention pooling)", 1e-5f, -1, &vit__pe24},
    {"vit_pe_core_base_patch16_224", NULL, "eva", "a Perception Encoder core tower (" VIT__EVA "rotary position "
     "embeddings, attention pooling)", 1e-5f, -1, &vit__pe14},
    {"vit_pe_core_large_patch14_336", NULL, "eva", "a Perception Encoder core tower (" VIT__EVA "rotary position "
     "embeddings, attention pooling)", 1e-5f, -1, &vit__pe24},
    {"vit_pe_core_gigantic_patch14_448", NULL, "eva", "a Perception Encoder core tower (" VIT__EVA "rotary position "
     "embeddings, attention pooling)", 1e-5f, -1, &vit__pe32},
    {"vit_pe_*", NULL, NULL, "a Perception Encoder language or spatial tower (" VIT__EVA "no LayerNorm after the "
     "blocks)", 0, -1, NULL},
    /* EVA-02 and EVA-CLIP's EVA-02 towers: timm's RoPE on a 16 x 16 reference grid; Ti and S with a fused qkv and a
       packed SwiGLU, B and L with separate q, k, v and a SwiGLU with a LayerNorm inside, the CLIP towers with a
       LayerNorm inside the attention too */
    {"eva02_enormous_*", NULL, NULL, "an EVA-02-CLIP-E (" VIT__EVA "post-norm blocks)", 0, -1, NULL},
    {"eva02_*", NULL, "eva", "an EVA-02 (" VIT__EVA "rotary position embeddings)", 0, -1, &vit__eva02},
    {"eva_large_patch14_*", NULL, "timm", "an EVA-01 ViT-L (timm's VisionTransformer)", 0, -1, NULL},
    {"eva_giant_*", NULL, "eva", "an EVA-01 giant (" VIT__EVA "q and v biases, a GELU MLP)", 0, -1, NULL},
    {"eva_*", NULL, NULL, "an EVA (" VIT__EVA "a name vit.h does not know)", 0, -1, NULL},
    /* the RoPE ViTs: timm's own (register tokens, average pooling, EVA-02's rotary embedding) and NAVER's
       (RoPE-Axial and RoPE-Mixed, an absolute position embedding beside in *_ape_*) */
    {"vit_*_patch16_rope_reg*_gap_256", NULL, "eva", "a ViT with rotary position embeddings (" VIT__EVA "EVA-02's, "
     "register tokens)", 0, -1, &vit__eva02},
    {"vit_*_patch16_rope_mixed_*", NULL, "eva", "a RoPE-Mixed ViT (" VIT__EVA "rotary frequencies learned per "
     "block and head)", 0, -1, &vit__rope_mixed},
    {"vit_*_patch16_rope_*", NULL, "eva", "a RoPE-Axial ViT (" VIT__EVA "rotary position embeddings on an xy grid)",
     0, -1, &vit__rope_axial},
    {"*_rope_*", NULL, NULL, "a ViT with rotary position embeddings (" VIT__EVA "a name vit.h does not know)", 0, -1,
     NULL},
    /* DINOv3 (its _qkvb variants with q and v biases) and LingBot-Vision, a DINOv3 pooled by its class token */
    {"vit_*_patch16_dinov3*", NULL, "eva", "a DINOv3 (" VIT__EVA "DINOv3's rotary position embeddings, register "
     "tokens, layer scale)", 1e-5f, -1, &vit__dinov3},
    {"vit_*_patch16_lingbot", NULL, "eva", "a LingBot-Vision ViT (" VIT__EVA "DINOv3's rotary position embeddings, "
     "register tokens)", 1e-5f, -1, &vit__dinov3},
    {"*_dinov3*", NULL, NULL, "a DINOv3 (" VIT__EVA "a name vit.h does not know)", 0, -1, NULL},
    {"*_sapiens2", NULL, NULL,
     "a Sapiens2 (" VIT__EVA "DINOv3's rotary embedding, grouped key-value heads, RmsNorm; vit.h has neither)", 0, -1,
     NULL},
    {"beit3_*", NULL, NULL, "a BEiT-3 (timm's VisionTransformer with a LayerNorm inside the attention and the MLP)", 0,
     -1, NULL},
    {"beit_*", NULL, "beit", "a BEiT (timm's Beit class)", 0, -1, NULL},
    {"beitv2_*", NULL, "beit", "a BEiT v2 (timm's Beit class)", 0, -1, NULL},
    {"beit*", NULL, NULL, "a BEiT (timm's Beit class) vit.h does not know", 0, -1, NULL},
    {"vit_*relpos_*", NULL, NULL, "a ViT with relative positions (timm's VisionTransformerRelPos)", 0, -1, NULL},
    {"samvit_*", NULL, NULL, "a SAM image encoder (timm's VisionTransformerSAM: windowed attention with relative "
                             "positions, a convolutional neck)", 0, -1, NULL},
    {"naflexvit_*", NULL, NULL, "a NaFlexViT (timm's NaFlexVit: variable-resolution patch sequences, the position "
                                "embedding resampled per image)", 0, -1, NULL},
    {"vit_*_r26_s32_*", NULL, NULL, "a hybrid ViT (a ResNet stem before the patch embedding)", 0, -1, NULL},
    {"vit_*_r50_s*", NULL, NULL, "a hybrid ViT (a ResNet stem before the patch embedding)", 0, -1, NULL},
    {"vit_*_resnet*", NULL, NULL, "a hybrid ViT (a ResNet stem before the patch embedding)", 0, -1, NULL},
    {"vit_tiny_r_s16_p8_*", NULL, NULL, "a hybrid ViT (a ResNet stem before the patch embedding)", 0, -1, NULL},
    {"vit_base_mci_*", NULL, NULL, "a hybrid ViT (a MobileCLIP convolutional stem)", 0, -1, NULL},
    {"aimv2_*", NULL, NULL, "an AIMv2 (RmsNorm, a SwiGLU MLP of separate gate and value layers, a norm in the patch "
                            "embedding)", 0, -1, NULL},
    /* timm's VisionTransformer with blocks or norms vit.h does not have */
    {"*_xp_*", NULL, NULL, "a ViT of parallel blocks (timm's ParallelScalingBlock) and RmsNorm", 0, -1, NULL},
    {"vit_pwee_*", NULL, NULL, "a ViT of parallel blocks (timm's ParallelScalingBlock)", 0, -1, NULL},
    {"*_18x2_*", NULL, NULL, "a ViT of parallel blocks (timm's ParallelThingsBlock)", 0, -1, NULL},
    {"*_rpn_*", NULL, NULL, "a ViT of post-norm blocks (timm's ResPostBlock)", 0, -1, NULL},
    {"vit_dpwee_*", NULL, NULL, "a ViT of parallel blocks with differential attention", 0, -1, NULL},
    {"vit_d*_reg1_gap_*", NULL, NULL, "a ViT with differential attention (timm's attn_layer='diff')", 0, -1, NULL},
    {"*_radio_*", NULL, NULL, "a RADIO ViT (timm's VisionTransformer without its final LayerNorm)", 0, -1, NULL},
    {"vit_intern300m_*", NULL, NULL, "an InternViT (timm's VisionTransformer without its final LayerNorm)", 0, -1,
     NULL},
    /* timm's VisionTransformer as vit.h runs it */
    {"vit_*_clip_quickgelu_*", NULL, "timm", "an OpenAI CLIP image tower", 1e-5f, VIT_ACT_QUICK_GELU, NULL},
    {"vit_*_clip_*", NULL, "timm", "a CLIP image tower", 1e-5f, -1, NULL},
    {"vit_so400m_patch16_siglip_*", NULL, "timm", "a SigLIP 2 image tower", 0, VIT_ACT_GELU_TANH, NULL},
    {"vit_giantopt_patch16_siglip_*", NULL, "timm", "a SigLIP 2 image tower", 0, VIT_ACT_GELU_TANH, NULL},
    {"vit_base_patch32_siglip_*", NULL, "timm", "a SigLIP 2 image tower", 0, VIT_ACT_GELU_TANH, NULL},
    {"vit_large_patch16_siglip_512", NULL, "timm", "a SigLIP 2 image tower", 0, VIT_ACT_GELU_TANH, NULL},
    {"vit_large_patch16_siglip_gap_512", NULL, "timm", "a SigLIP 2 image tower", 0, VIT_ACT_GELU_TANH, NULL},
    {"vit_*_siglip_*", NULL, "timm", "a SigLIP image tower", 0, -1, NULL},
    {"deit_*", NULL, "timm", "a DeiT", 0, -1, NULL},
    {"deit3_*", NULL, "timm", "a DeiT III", 0, -1, NULL},
    {"flexivit_*", NULL, "timm", "a FlexiViT", 0, -1, NULL},
    {"vit_*_patch*", NULL, "timm", "a ViT", 0, -1, NULL}};

/* transformers' model_type, then architectures[0] */
#define VIT__BEIT_SEG \
    "a BEiT segmenter (UperNet over four layers' feature maps: transposed convolutions, pyramid pooling and 3x3 " \
    "convolutions to a per-pixel map, which vit.h does not have)"
static const vit__arch vit__hf_archs[] = {
    {"dinov2*", "Dinov2ForImageClassification;Dinov2WithRegistersForImageClassification", NULL,
     "a DINOv2 classifier (its head reads the class token and the mean of the patch tokens side by side)", 0, -1, NULL},
    {"dinov2", "Dinov2Model;", "hf_dinov2", "DINOv2", 0, -1, NULL},
    {"dinov2_with_registers", "Dinov2WithRegistersModel;", "hf_dinov2_reg", "DINOv2 with registers", 0, -1, NULL},
    {"vit", "ViTModel;ViTForImageClassification;", "transformers", "ViT", 0, -1, NULL},
    {"clip", "CLIPModel;", "hf_clip", "CLIP", 0, -1, NULL},
    {"clip_vision_model", "CLIPVisionModel;CLIPVisionModelWithProjection;", "hf_clip", "CLIP's image tower", 0, -1,
     NULL},
    {"siglip", "SiglipModel;", "hf_siglip", "SigLIP", 0, -1, NULL},
    {"siglip_vision_model", "SiglipVisionModel;", "hf_siglip", "SigLIP's image tower", 0, -1, NULL},
    /* BEiT and Data2Vec vision (BEiT's modules): the encoder and the image classifier; the other heads by name */
    {"beit", "BeitModel;BeitForImageClassification;", "hf_beit", "BEiT", 0, -1, NULL},
    {"data2vec-vision", "Data2VecVisionModel;", "hf_beit", "Data2Vec vision (BEiT's modules)", 0, -1, NULL},
    {"data2vec-vision", "Data2VecVisionForImageClassification", "hf_data2vec", "Data2Vec vision (BEiT's modules)", 0,
     -1, NULL},
    {"beit", "BeitForMaskedImageModeling", NULL,
     "BEiT's masked image modelling (a LayerNorm and a linear layer predicting a visual token for every patch, after "
     "masked patches become the mask token; vit.h has no per-patch head and no masking)", 0, -1, NULL},
    {"beit", "BeitForSemanticSegmentation", NULL, VIT__BEIT_SEG, 0, -1, NULL},
    {"data2vec-vision", "Data2VecVisionForSemanticSegmentation", NULL, VIT__BEIT_SEG, 0, -1, NULL},
    {"beit", "BeitBackbone", NULL,
     "a BEiT backbone (chosen layers' hidden states as feature maps, with an optional FPN; vit.h returns the last "
     "layer's only)", 0, -1, NULL}};
#undef VIT__EVA
#undef VIT__BEIT_SEG

/* 1 if s matches pattern p, where '*' matches any run of characters. */
static int vit__glob(const char *p, const char *s) {
    for (; *p && *p != '*'; p++, s++)
        if (*p != *s) return 0;
    if (!*p) return !*s;
    for (;; s++) {
        if (vit__glob(p + 1, s)) return 1;
        if (!*s) return 0;
    }
}

/* The row of timm's architecture name, or of transformers' model_type and
   class (hf_arch, NULL when absent; any class when any_class); NULL when
   no row matches. */
static const vit__arch *vit__arch_find(int timm, const char *name, const char *hf_arch, int any_class) {
    const vit__arch *t = timm ? vit__timm_archs : vit__hf_archs;
    size_t i, n = timm ? sizeof vit__timm_archs / sizeof vit__timm_archs[0]
                       : sizeof vit__hf_archs / sizeof vit__hf_archs[0];
    for (i = 0; i < n; i++)
        if (vit__glob(t[i].pattern, name) &&
            (any_class || !t[i].classes || vit__in_list(t[i].classes, hf_arch ? hf_arch : "")))
            return &t[i];
    return NULL;
}

/* The config's architecture, checked: *out is its row (NULL when cj names
   none), one vit.h runs, with a naming the file's tensors follow. */
static vit_result vit__arch_check(const vit__cfg *cj, const char *naming, const char *src, const vit__arch **out) {
    const vit__arch *a = NULL;
    const char *key = cj->arch ? "timm architecture" : "transformers model_type";
    const char *name = cj->arch ? cj->arch : cj->model_type;
    *out = NULL;
    if (cj->st.src && cj->bad_arg)
        return vit__fail(VIT_ERR_UNSUPPORTED, "%s: model_args '%s' is %s: %s, which vit.h does not run", cj->st.src,
                         cj->bad_arg->key, cj->bad_value, cj->bad_arg->what);
    if (!cj->st.src || !name) return VIT_OK;
    if (cj->arch && cj->model_type)
        return vit__fail(VIT_ERR_FORMAT,
                         "%s: names both a timm architecture ('%s') and a transformers model_type ('%s')", cj->st.src,
                         cj->arch, cj->model_type);
    a = vit__arch_find(cj->arch != NULL, name, cj->hf_arch, 0);
    if (!a && cj->arch)
        return vit__fail(VIT_ERR_UNSUPPORTED,
                         "%s: timm architecture '%s' is not one vit.h knows: it runs timm's VisionTransformer models "
                         "named vit_*_patch*, deit*, flexivit_* and eva_large_patch14_*, its Beit models beit_* "
                         "and beitv2_*, and its Eva models eva02_*, eva_giant_*, vit_pe_core_*, vit_*_patch16_dinov3*, "
                         "vit_*_patch16_lingbot and vit_*_patch16_rope_* (README.md lists them)",
                         cj->st.src, name);
    if (!a && !vit__arch_find(0, name, NULL, 1))
        return vit__fail(VIT_ERR_UNSUPPORTED,
                         "%s: transformers model_type '%s' is not one vit.h runs (it runs vit, dinov2, "
                         "dinov2_with_registers, clip, clip_vision_model, siglip, siglip_vision_model, beit and "
                         "data2vec-vision)",
                         cj->st.src, name);
    if (!a)
        return vit__fail(VIT_ERR_UNSUPPORTED,
                         "%s: transformers architecture '%s' (model_type '%s') is not one vit.h runs", cj->st.src,
                         cj->hf_arch ? cj->hf_arch : "", name);
    if (!a->naming)
        return vit__fail(VIT_ERR_UNSUPPORTED, "%s: %s '%s'%s%s is %s: vit.h does not run it", cj->st.src, key, name,
                         cj->hf_arch ? ", architecture " : "", cj->hf_arch ? cj->hf_arch : "", a->what);
    if (strcmp(a->naming, naming))
        return vit__fail(VIT_ERR_FORMAT, "%s: %s '%s' is %s in %s naming, but the tensors of %s follow %s naming",
                         cj->st.src, key, name, a->what, a->naming, src, naming);
    *out = a;
    return VIT_OK;
}

/* Names, sizes and hyperparameters of a ViT file without vit.h metadata.
   c (config.json, if c->st.src) is read already. */
/* The shape of tensor `name`, which must be ndim-D, into d[]; 0 if absent. */
static int vit__infer_shape(vit__ld *L, const char *name, int ndim, int64_t *d) {
    const vit__entry *e = vit__entry_find(&L->st, name);
    int i;
    if (!e || e->ndim != ndim) return 0;
    for (i = 0; i < ndim; i++) d[i] = e->shape[i];
    return 1;
}

static vit_result vit__infer(vit__ld *L, const vit__cfg *cj, const vit_load_opts *o) {
    vit__st *st = &L->st;
    vit_model *m = L->m;
    vit_config *c = &m->cfg;
    const vit__vit_naming *nm = NULL;
    const vit__block_naming *bn;
    const vit__mlp_naming *mn;
    const vit__mha_naming *an;
    const vit__entry *e = NULL;
    const vit__arch *arch;
    const char *src = st->src, *heads_from, *pool_name = "class token", *s, *variant = NULL;
    char n[256], pre[128], got[96], pool_buf[96];
    int32_t T, G = 0, P, i, l, feat, H1 = 0, k;
    int rope_attn, qkv_b;
    int64_t d[3] = {0, 0, 0};
    vit_result r;

    /* the naming: the first row whose probe the file has, with its
       classifier prefix (a transformers ViTForImageClassification), then
       without (a ViTModel) */
    /* a naming that only the architecture's name tells (its probe NULL): chosen by it when the file has its
       patch embedding and block 0's q in one of the naming's own forms (separate; fused, with a bias of its own
       only where the architecture's attention is timm's AttentionRope) (else the probes decide, and the
       architecture's check names the two namings) */
    arch = cj->st.src && cj->arch ? vit__arch_find(1, cj->arch, NULL, 0) : NULL;
    for (i = 0; arch && arch->naming && i < (int32_t)(sizeof vit__vit_names / sizeof vit__vit_names[0]) && !e; i++) {
        const vit__block_naming *b = vit__vit_names[i].block;
        int own = !b->mha_names->q_bias;
        nm = &vit__vit_names[i];
        if (nm->probe || strcmp(nm->naming, arch->naming)) continue;
        snprintf(pre, sizeof pre, nm->block_fmt, 0);
        snprintf(n, sizeof n, "%s%sqkv.bias", pre, b->attn);
        rope_attn = arch->eva && arch->eva->attn_rope;
        qkv_b = vit__entry_find(st, n) != NULL;
        snprintf(n, sizeof n, "%s%s%s", pre, b->attn, b->mha_names->w ? b->mha_names->w : "");
        own = own || (b->mha_names->w && vit__entry_find(st, n) && (rope_attn || !qkv_b));
        snprintf(n, sizeof n, "%s%s%s.weight", pre, b->attn, b->mha_sep ? b->mha_sep->q : "");
        own = own || (b->mha_sep && vit__entry_find(st, n));
        snprintf(n, sizeof n, "%s.weight", nm->patch.conv);
        if (own && (e = vit__entry_find(st, n)) != NULL) variant = nm->variant;
    }
    for (i = 0; i < (int32_t)(sizeof vit__vit_names / sizeof vit__vit_names[0]) && !e; i++) {
        const char *p;
        nm = &vit__vit_names[i];
        for (p = nm->probe; p && *p && !e; p += strcspn(p, ";") + (p[strcspn(p, ";")] == ';')) {
            snprintf(n, sizeof n, "%s%.*s", nm->pfx, (int)strcspn(p, ";"), p);
            if ((e = vit__entry_find(st, n)) != NULL) {
                snprintf(L->pfx, sizeof L->pfx, "%s", nm->pfx);
                variant = nm->variant_pfx;
            } else if ((e = vit__entry_find(st, n + strlen(nm->pfx))) != NULL)
                variant = nm->variant;
        }
    }
    if (!e) {
        if (!st->n)
            return vit__fail(VIT_ERR_MISSING, "%s: no vit.h metadata and no tensors; hint: export with tools/export.py",
                             src);
        return vit__fail(
            VIT_ERR_MISSING,
            "%s: no vit.h metadata, and tensor '%s' follows no ViT naming vit.h knows (torchvision conv_proj.*, timm "
            "patch_embed.*, transformers [vit.]embeddings.*, Dinov2Model, CLIPVisionModel, SiglipVisionModel, "
            "[beit.]BeitModel); hint: export with tools/export.py",
            src, st->e[0].name);
    }
    if ((r = vit__arch_check(cj, nm->naming, src, &arch)) != VIT_OK) return r;
    m->kind = VIT_KIND_VIT;
    snprintf(m->naming, sizeof m->naming, "%s", nm->naming);
    bn = nm->block;

    /* patch embedding (C, in_channels, P, P), its bias if any */
    snprintf(n, sizeof n, "%s%s.weight", L->pfx, nm->patch.conv);
    e = vit__entry_find(st, n);
    if (!e) return vit__fail(VIT_ERR_MISSING, "%s: missing tensor '%s' (the patch embedding)", src, n);
    vit__shape_text(got, sizeof got, e->ndim, e->shape);
    if (e->ndim != 4 || e->shape[2] != e->shape[3] || e->shape[0] < 1 || e->shape[0] > 65536 || e->shape[1] < 1 ||
        e->shape[1] > 64 || e->shape[2] < 1 || e->shape[2] > 8192)
        return vit__fail(VIT_ERR_SHAPE, "%s: tensor '%s' has shape %s, expected (hidden, in_channels, P, P)", src,
                         e->name, got);
    c->dim = (int32_t)e->shape[0];
    c->in_channels = (int32_t)e->shape[1];
    c->patch_size = (int32_t)e->shape[2];
    snprintf(n, sizeof n, "%s%s.bias", L->pfx, nm->patch.conv);
    c->patch_bias = vit__has(L, n);

    /* prefix tokens: class, distillation (with its head), registers (1, R, C) */
    snprintf(n, sizeof n, "%s%s", L->pfx, nm->patch.cls ? nm->patch.cls : "");
    c->class_token = nm->patch.cls && vit__has(L, n);
    snprintf(n, sizeof n, "%s%s", L->pfx, nm->patch.dist ? nm->patch.dist : "");
    c->dist_token = nm->patch.dist && vit__has(L, n);
    snprintf(n, sizeof n, "%s%s", L->pfx, nm->patch.reg ? nm->patch.reg : "");
    if (nm->patch.reg && vit__infer_shape(L, n, 3, d)) {
        if (d[1] < 1 || d[1] > 64)
            return vit__fail(VIT_ERR_UNSUPPORTED, "%s: tensor '%s': %lld register tokens, vit.h takes 1..64", src, n,
                             (long long)d[1]);
        c->reg_tokens = (int32_t)d[1];
    }
    P = vit__prefix(c);

    /* BEiT's relative position bias (R, NH), R = (2G-1)^2 + 3: one table
       all blocks share, or one in each block's attention */
    c->rel_pos = 0;
    snprintf(pre, sizeof pre, "%s", L->pfx);
    snprintf(pre + strlen(pre), sizeof pre - strlen(pre), nm->block_fmt, 0);
    snprintf(n, sizeof n, "%s%s", L->pfx, nm->rel_shared ? nm->rel_shared : "");
    if (nm->rel_shared && vit__infer_shape(L, n, 2, d)) c->rel_pos = 2;
    snprintf(n, sizeof n, "%s%s%s", pre, bn->attn, bn->mha_names->rel ? bn->mha_names->rel : "");
    if (bn->mha_names->rel && vit__has(L, n)) {
        if (c->rel_pos)
            return vit__fail(VIT_ERR_UNSUPPORTED,
                             "%s: both a shared relative position bias and one in each block (tensor '%s'); vit.h "
                             "runs one or the other",
                             src, n);
        c->rel_pos = 1;
        vit__infer_shape(L, n, 2, d);
    }

    /* position embedding (1, T, C) or (T, C): the image is G patches a
       side, and T - G*G prefix tokens have a position (all of them in
       timm's default, none with its no_embed_class, the class token alone
       in transformers' DINOv2 with registers). BEiT's may be absent: then
       config.json's image size, else the relative position bias's table
       says G; transformers' BEiT may have no positions at all (its
       config's defaults), when its config.json says so and gives the size */
    c->pos_embed = 1;
    snprintf(n, sizeof n, "%s%s", L->pfx, nm->patch.pos);
    if (!(e = vit__entry_find(st, n)) &&
        (c->rel_pos || (cj->st.src && cj->beit[VIT__BEIT_ABS_POS] == 0 && cj->image))) {
        c->pos_embed = 0;
        c->pos_prefix = P;
        if (cj->image && cj->image % c->patch_size)
            return vit__fail(VIT_ERR_FORMAT, "%s: image size %d is not a multiple of the patch size %d", cj->st.src,
                             (int)cj->image, (int)c->patch_size);
        for (G = 1; G < 8192 && (2 * (int64_t)G - 1) * (2 * G - 1) + 3 < d[0]; G++) {}
        if (cj->image) G = cj->image / c->patch_size;
        else if ((2 * (int64_t)G - 1) * (2 * G - 1) + 3 != d[0])
            return vit__fail(VIT_ERR_SHAPE,
                             "%s: a relative position bias table of %lld entries is not (2G-1)^2 + 3 for a G x G "
                             "grid, and no config.json gives the image size",
                             src, (long long)d[0]);
    } else if (!e && arch && arch->eva && arch->eva->rope && cj->use_rope != 0) {
        /* rotary embeddings alone (DINOv3, the RoPE ViTs): the config's image size sets the grid */
        c->pos_embed = 0;
        c->pos_prefix = P;
        if (!cj->image || cj->image % c->patch_size)
            return vit__fail(VIT_ERR_FORMAT,
                             "%s: no position embedding, so the image size must come from config.json (model_args "
                             "img_size), as a multiple of the patch size %d",
                             cj->st.src, (int)c->patch_size);
        G = cj->image / c->patch_size;
    } else if (!e)
        return vit__fail(VIT_ERR_MISSING, "%s: missing tensor '%s' (the position embedding)", src, n);
    if (!c->pos_embed) {
        if ((int64_t)G * c->patch_size > 8192)
            return vit__fail(VIT_ERR_UNSUPPORTED, "%s: image size %d is more than 8192", src,
                             (int)(G * c->patch_size));
        c->image_size = G * c->patch_size;
    } else {
        vit__shape_text(got, sizeof got, e->ndim, e->shape);
        T = (int32_t)(e->ndim == 3 ? e->shape[1] : e->ndim == 2 ? e->shape[0] : 0);
        if (e->ndim != 3 - !nm->patch.pos3d || (e->ndim == 3 && e->shape[0] != 1) || e->shape[e->ndim - 1] != c->dim ||
            T < 1 || T > 16384)
            return vit__fail(
                VIT_ERR_SHAPE,
                "%s: tensor '%s' has shape %s, expected %s with 1 <= T <= 16384 (hidden size %d from the patch "
                "embedding)",
                src, n, got, nm->patch.pos3d ? "[1,T,C]" : "[T,C]", (int)c->dim);
        {
            /* config.json's image size settles it; else the first that fits */
            int32_t tries[3], nt = 0, j;
            tries[nt++] = P;
            if (P > 1 && c->class_token) tries[nt++] = 1;
            if (P > 0) tries[nt++] = 0;
            for (j = 0, k = -1; j < nt && k < 0; j++) {
                for (G = 1; G * G < T - tries[j]; G++) {}
                if (T - tries[j] >= 1 && G * G == T - tries[j] && (!cj->image || G * c->patch_size == cj->image))
                    k = tries[j];
            }
        }
        if (k < 0)
            return vit__fail(
                VIT_ERR_SHAPE,
                "%s: tensor '%s' has %d positions; vit.h needs a square grid of G*G patches after %d, 1 or 0 of the "
                "%d prefix tokens",
                src, n, (int)T, (int)P, (int)P);
        c->pos_prefix = k;
        if ((int64_t)G * c->patch_size > 8192)
            return vit__fail(VIT_ERR_UNSUPPORTED, "%s: image size %d is more than 8192", src, (int)(G * c->patch_size));
        c->image_size = G * c->patch_size;
    }
    snprintf(n, sizeof n, "%s%s.weight", L->pfx, nm->pre_norm ? nm->pre_norm : "");
    c->pre_norm = nm->pre_norm && vit__has(L, n);

    /* depth: blocks 0, 1, ... as long as their first LayerNorm is there */
    for (l = 0; l <= 1024; l++) {
        snprintf(pre, sizeof pre, nm->block_fmt, (int)l);
        snprintf(n, sizeof n, "%s%s%s.weight", L->pfx, pre, bn->ln1);
        if (!vit__entry_find(st, n)) break;
    }
    if (l > 1024) return vit__fail(VIT_ERR_UNSUPPORTED, "%s: more than 1024 encoder blocks", src);
    if (l == 0) return vit__fail(VIT_ERR_MISSING, "%s: missing tensor '%s' (encoder block 0)", src, n);
    c->depth = l;

    /* block 0 says the rest; every block is checked when bound. The MLP:
       fc2 (C, H) gives H, and an fc1 of 2H rows is a gated one (SwiGLU) */
    snprintf(pre, sizeof pre, "%s", L->pfx);
    snprintf(pre + strlen(pre), sizeof pre - strlen(pre), nm->block_fmt, 0);
    mn = bn->mlp_names;
    snprintf(n, sizeof n, "%s%s%s.weight", pre, bn->mlp, mn->fc1);
    if (!vit__has(L, n)) mn = bn->glu_names;
    snprintf(n, sizeof n, "%s%s%s.weight", pre, bn->mlp, mn->fc1);
    if ((r = vit__infer_2d(L, n, "the MLP's first linear", &H1, NULL)) != VIT_OK) return r;
    snprintf(n, sizeof n, "%s%s%s.weight", pre, bn->mlp, mn->fc2);
    if ((r = vit__infer_2d(L, n, "the MLP's second linear", &i, &c->mlp_dim)) != VIT_OK) return r;
    if (c->mlp_dim > (1 << 20))
        return vit__fail(VIT_ERR_UNSUPPORTED, "%s: tensor '%s': an MLP of %d is more than vit.h supports", src, n,
                         (int)c->mlp_dim);
    c->glu = H1 == 2 * c->mlp_dim || (mn->fc1_x && H1 == c->mlp_dim); /* packed, or gate and value apart */
    snprintf(n, sizeof n, "%s%s%s.weight", pre, bn->mlp, mn->norm ? mn->norm : "");
    c->mlp_norm = mn->norm && vit__has(L, n);
    if (!c->glu && H1 != c->mlp_dim)
        return vit__fail(VIT_ERR_SHAPE, "%s: block 0's MLP takes %d features from %d outputs of its first layer", src,
                         (int)c->mlp_dim, (int)H1);
    an = vit__block_mha(L, pre, bn);
    rope_attn = arch && arch->eva && arch->eva->attn_rope; /* the architecture's attention: timm's AttentionRope */
    snprintf(n, sizeof n, "%s%s%s", pre, bn->attn, an->q_bias ? an->q_bias : "qkv.bias");
    if (!strcmp(nm->naming, "eva") && vit__has(L, n) && rope_attn == !!an->q_bias)
        return vit__fail(VIT_ERR_FORMAT, "%s: tensor '%s' is %s, but timm architecture '%s' has %s", src, n,
                         an->q_bias ? "EvaAttention's q bias" : "a bias of the whole qkv (timm's AttentionRope)",
                         cj->arch ? cj->arch : "", rope_attn ? "AttentionRope's one qkv bias"
                                                             : "EvaAttention's q_bias and v_bias");
    if (an->q_bias) snprintf(n, sizeof n, "%s%s%s", pre, bn->attn, an->q_bias);
    else if (an->layout == VIT__QKV_SEPARATE) snprintf(n, sizeof n, "%s%s%s.bias", pre, bn->attn, an->q);
    else snprintf(n, sizeof n, "%s%s%s", pre, bn->attn, an->b);
    c->qkv_bias = vit__has(L, n);
    snprintf(n, sizeof n, "%s%s%s.weight", pre, bn->attn, an->norm ? an->norm : "");
    c->attn_norm = an->norm && vit__has(L, n);
    snprintf(n, sizeof n, "%s%s", pre, bn->ls1 ? bn->ls1 : "");
    c->layer_scale = bn->ls1 && vit__has(L, n);
    snprintf(n, sizeof n, "%s%s%s.weight", pre, bn->attn, an->q_norm ? an->q_norm : "");
    c->qk_norm = an->q_norm && vit__has(L, n);

    /* head (classes, C or R) and torchvision's pre_logits or transformers'
       pooler (R, C); a ViTModel's pooler is its output: no head then */
    snprintf(n, sizeof n, "%s.weight", nm->head ? nm->head : "");
    if (nm->head && vit__entry_find(st, n) &&
        (r = vit__infer_2d(L, n, "the classifier", &c->num_classes, &feat)) != VIT_OK)
        return r;
    snprintf(n, sizeof n, "%s%s.weight", L->pfx, nm->pre ? nm->pre : "");
    if (nm->pre && vit__entry_find(st, n) && (nm->pre_with_head || !c->num_classes) &&
        (r = vit__infer_2d(L, n, "the pre-logits layer", &c->representation_size, NULL)) != VIT_OK)
        return r;
    if (c->representation_size > (1 << 20))
        return vit__fail(VIT_ERR_UNSUPPORTED, "%s: tensor '%s' is too large", src, n);

    /* config.json's sizes (transformers' keys, timm's model_args) must be
       the weights': each is named with the tensor that says otherwise */
    if (cj->st.src) {
        char conv[256], reg[256], end[300], mlp[300], pos[256];
        const struct { const char *key; int32_t said, found; const char *from;
        } chk[] = {{"hidden_size", cj->hidden ? cj->hidden : -1, c->dim, conv},
                   {"num_hidden_layers", cj->layers ? cj->layers : -1, c->depth, end},
                   {"intermediate_size", cj->mlp ? cj->mlp : -1, c->mlp_dim, mlp},
                   {"image_size", cj->image ? cj->image : -1, c->image_size, pos},
                   {"patch_size", cj->patch ? cj->patch : -1, c->patch_size, conv},
                   {"num_channels", cj->channels ? cj->channels : -1, c->in_channels, conv},
                   {"model_args.embed_dim", cj->embed_dim, c->dim, conv},
                   {"model_args.depth", cj->depth, c->depth, end},
                   {"model_args.reg_tokens", cj->reg_tokens, c->reg_tokens, reg}};
        snprintf(conv, sizeof conv, "tensor '%s%s.weight'", L->pfx, nm->patch.conv);
        snprintf(pos, sizeof pos, "tensor '%s%s'", L->pfx, nm->patch.pos);
        snprintf(pre, sizeof pre, nm->block_fmt, 0);
        snprintf(mlp, sizeof mlp, "tensor '%s%s%s%s.weight'", L->pfx, pre, bn->mlp, mn->fc2);
        snprintf(pre, sizeof pre, nm->block_fmt, (int)c->depth);
        snprintf(end, sizeof end, "the blocks end before tensor '%s%s%s.weight'", L->pfx, pre, bn->ln1);
        snprintf(reg, sizeof reg, "tensor '%s%s'%s", L->pfx, nm->patch.reg ? nm->patch.reg : "register tokens",
                 c->reg_tokens ? "" : " is absent");
        for (i = 0; i < (int32_t)(sizeof chk / sizeof chk[0]); i++)
            if (chk[i].said >= 0 && chk[i].said != chk[i].found)
                return vit__fail(VIT_ERR_FORMAT, "%s: '%s' is %d, but the weights have %d (%s of %s)", cj->st.src,
                                 chk[i].key, (int)chk[i].said, (int)chk[i].found, chk[i].from, src);
    }

    /* heads: the caller's, config.json's, or the standard size's */
    if (o && o->heads > 0) {
        c->heads = o->heads;
        heads_from = "given";
    } else if (cj->heads) {
        c->heads = cj->heads;
        heads_from = cj->st.src;
    } else {
        for (i = 0; i < (int32_t)(sizeof vit__std_heads / sizeof vit__std_heads[0]); i++)
            if (vit__std_heads[i].dim == c->dim) break;
        if (i == (int32_t)(sizeof vit__std_heads / sizeof vit__std_heads[0]))
            return vit__fail(VIT_ERR_MISSING,
                             "%s: cannot tell the number of attention heads of a ViT of hidden size %d; give it "
                             "(vit_load_opts.heads, vit --heads N) or a config.json with num_attention_heads",
                             src, (int)c->dim);
        c->heads = vit__std_heads[i].heads;
        heads_from = "the standard for its hidden size";
    }
    if (c->dim % c->heads)
        return vit__fail(VIT_ERR_FORMAT, "%s: hidden size %d is not a multiple of %d heads (%s)", src, (int)c->dim,
                         (int)c->heads, heads_from);

    /* LayerNorm eps and activation: config.json's, else what its
       architecture's row implies, else the naming's default (SiLU for a
       gated MLP) */
    c->ln_eps = arch && arch->ln_eps > 0.0f ? arch->ln_eps : nm->ln_eps;
    c->act = c->glu ? VIT_ACT_SILU : arch && arch->act >= 0 ? (vit_act)arch->act : nm->act;
    if (cj->ln_eps > 0.0) c->ln_eps = (float)cj->ln_eps;

    /* the rotary embedding: its architecture's, each setting as model_args give it else as the entrypoint does;
       timm's mixed RoPE takes no offset, and only its axial one a reference grid */
    if (arch && arch->eva && arch->eva->rope && cj->use_rope != 0) {
        const vit__eva_args *ea = arch->eva;
        c->rope = cj->rope_type >= 0 ? cj->rope_type : ea->rope;
        c->rope_ref = c->rope != VIT_ROPE_AXIAL ? 0 : cj->rope_ref >= 0 ? cj->rope_ref : ea->ref;
        c->rope_temp = cj->rope_temp > 0.0 ? (float)cj->rope_temp : ea->temp;
        c->rope_offset = c->rope == VIT_ROPE_MIXED ? 0.0f : cj->rope_offset > -1e30 ? (float)cj->rope_offset
                                                                                      : ea->offset;
        c->rope_xy = cj->rope_xy >= 0 ? cj->rope_xy : ea->xy;
        c->rope_half = cj->rope_half >= 0 ? cj->rope_half : ea->half;
        if (c->rope == VIT_ROPE_MIXED && c->rope_half)
            return vit__fail(VIT_ERR_FORMAT, "%s: a mixed rotary embedding with pairs in halves (timm refuses it too)",
                             cj->st.src);
    }
    c->pool_heads = cj->pool_heads > 0 ? cj->pool_heads : arch && arch->eva ? arch->eva->pool_heads : 0;
    if (cj->use_rope == 1 && !c->rope)
        return vit__fail(VIT_ERR_UNSUPPORTED, "%s: model_args 'use_rot_pos_emb' is true: %s runs no rotary embedding",
                         cj->st.src, cj->arch ? cj->arch : "this architecture");
    if (cj->act && !c->glu) { /* a gated MLP is SwiGLU whatever the config's activation */
        int a = vit__act_of(cj->act);
        if (a < 0)
            return vit__fail(
                VIT_ERR_UNSUPPORTED,
                "%s: activation '%s' is not supported (vit.h has gelu, gelu_tanh, quick_gelu, silu and relu)",
                cj->st.src, cj->act);
        c->act = (vit_act)a;
    }

    /* pooling: attention pooling where the file has its probe; timm's
       global_pool, where with 'avg' fc_norm normalises the mean of the
       patch tokens, else norm normalises each token before it */
    c->pool = c->class_token ? VIT_POOL_CLS : VIT_POOL_AVG;
    c->norm_tokens = !c->class_token;
    snprintf(n, sizeof n, "%s%s%s", L->pfx, nm->pool ? nm->pool : "", nm->pool_in_proj ? "probe" : "latent");
    if (nm->pool && vit__has(L, n)) {
        c->pool = VIT_POOL_MAP;
        pool_name = "attention pooling";
        /* timm's Eva hands its pool every token; its VisionTransformer drops the prefix first */
        c->pool_prefix = !strcmp(nm->naming, "eva");
    }
    if (cj->pool && nm->pool_rule != VIT__POOL_TIMM)
        return vit__fail(VIT_ERR_FORMAT, "%s: global_pool is a timm setting, and %s has %s naming", cj->st.src, src,
                         m->naming);
    if (nm->pool_rule == VIT__POOL_TIMM && c->pool != VIT_POOL_MAP) {
        int fc;
        snprintf(n, sizeof n, "%s%s.weight", L->pfx, nm->norm_alt);
        fc = cj->fc_norm >= 0 ? cj->fc_norm : vit__entry_find(st, n) != NULL;
        const char *gp = cj->pool ? cj->pool : fc || !c->class_token ? "avg" : "token";
        L->norm = fc ? nm->norm_alt : NULL;
        if (!strcmp(gp, "map"))
            return vit__fail(VIT_ERR_MISSING,
                             "%s: global_pool 'map', but the file has no tensor '%s%slatent' (the attention pool)",
                             cj->st.src ? cj->st.src : src, L->pfx, nm->pool);
        if (!strcmp(gp, "avg")) {
            c->pool = VIT_POOL_AVG;
            c->norm_tokens = !fc;
            snprintf(pool_buf, sizeof pool_buf, "mean of the patch tokens, then %s", nm->norm_alt);
            pool_name = fc ? pool_buf : "norm, then the mean of the patch tokens";
        } else if (strcmp(gp, "token"))
            return vit__fail(VIT_ERR_UNSUPPORTED,
                             "%s: global_pool '%s' is not supported (vit.h pools with 'token', 'avg' or 'map')",
                             cj->st.src ? cj->st.src : src, gp);
        else c->pool = VIT_POOL_CLS;
    }
    if (c->pool == VIT_POOL_CLS && c->dist_token) pool_name = "class and distillation tokens";
    if (c->pool != VIT_POOL_MAP) c->pool_heads = 0; /* timm's attn_pool_num_heads means nothing without the pool */

    /* transformers' BEiT switches must be what the tensors say: each is
       named with the tensor it makes */
    if (cj->st.src && nm->rel_shared) {
        char t[VIT__BEIT_SWITCHES][300];
        const char *hint = "";
        int32_t found[VIT__BEIT_SWITCHES];
        snprintf(pre, sizeof pre, nm->block_fmt, 0);
        snprintf(t[VIT__BEIT_ABS_POS], sizeof t[0], "%s%s", L->pfx, nm->patch.pos);
        snprintf(t[VIT__BEIT_REL_POS], sizeof t[0], "%s%s%s%s", L->pfx, pre, bn->attn, bn->mha_names->rel);
        snprintf(t[VIT__BEIT_SHARED_REL_POS], sizeof t[0], "%s%s", L->pfx, nm->rel_shared);
        snprintf(t[VIT__BEIT_LAYER_SCALE], sizeof t[0], "%s%s%s", L->pfx, pre, bn->ls1);
        snprintf(t[VIT__BEIT_MEAN_POOL], sizeof t[0], "%s%s.weight", L->pfx, nm->norm_alt);
        found[VIT__BEIT_ABS_POS] = c->pos_embed;
        found[VIT__BEIT_REL_POS] = c->rel_pos == 1;
        found[VIT__BEIT_SHARED_REL_POS] = c->rel_pos == 2;
        found[VIT__BEIT_LAYER_SCALE] = c->layer_scale;
        found[VIT__BEIT_MEAN_POOL] = L->norm != NULL;
        snprintf(n, sizeof n, "%s%s.weight", L->pfx, nm->norm);
        if (!found[VIT__BEIT_MEAN_POOL] && !vit__has(L, n))
            hint = ": saved without its pooler, as a Data2VecVisionModel is, a mean-pooling model has no LayerNorm "
                   "after the blocks, which vit.h needs";
        for (k = 0; k < VIT__BEIT_SWITCHES; k++)
            if (cj->beit[k] >= 0 && cj->beit[k] != found[k])
                return vit__fail(VIT_ERR_FORMAT, "%s: '%s' is %s, but the weights have %stensor '%s'%s (%s)",
                                 cj->st.src, vit__beit_keys[k],
                                 k == VIT__BEIT_LAYER_SCALE ? (cj->beit[k] ? "above 0" : "0")
                                                            : (cj->beit[k] ? "true" : "false"),
                                 found[k] ? "" : "no ", t[k], k == VIT__BEIT_MEAN_POOL ? hint : "", src);
    }

    if ((r = vit__vit_check(m, L)) != VIT_OK) return r;
    s = cj->arch ? cj->arch : cj->hf_arch;
    if (s && !strcmp(s, variant)) s = NULL;
    snprintf(L->inferred, sizeof L->inferred,
             "%s naming (%s%s%s), no vit.h metadata: %d heads (%s), LayerNorm eps %g, %s%s, pool: %s", m->naming,
             variant, s ? " " : "", s ? s : "", (int)c->heads, heads_from, (double)c->ln_eps, vit__act_name(c->act),
             c->glu ? " (gated)" : "", pool_name);
    return VIT_OK;
}

/* ---- model: reading a file ---- */

/* Appends to the inferred-config note, if there is one. */
VIT__FORMAT(2, 3)
static void vit__note(vit__ld *L, const char *fmt, ...) {
    size_t u = strlen(L->inferred);
    va_list ap;
    if (!u) return;
    va_start(ap, fmt);
    vit__vsnprintf(L->inferred + u, sizeof L->inferred - u, fmt, ap);
    va_end(ap);
}

/* A hint for a checkpoint tensor vit.h has no place for. */
static const char *vit__unsupported_hint(const char *name) {
    static const struct { const char *part, *hint;
    } t[] = {{".ls1.", "layer scale (timm's init_values)"},
             {".ls2.", "layer scale (timm's init_values)"},
             {"reg_token", "register tokens"},
             {"norm_pre", "a LayerNorm before the blocks (timm's pre_norm)"},
             {"attn_pool", "attention pooling (timm's global_pool='map')"},
             {"q_norm", "qk_norm"},
             {"k_norm", "qk_norm"},
             {"dist_token", "a distillation token (DeiT)"},
             {"head_dist", "a distillation head (DeiT)"},
             {"mask_token", "a mask token (masked image modelling)"},
             {"patch_embed.norm", "a LayerNorm in the patch embedding"},
             {"pooler.", "a pooler beside a classifier"}};
    static VIT__TLS char buf[96];
    size_t i;
    for (i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strstr(name, t[i].part)) {
            snprintf(buf, sizeof buf, "; the naming has no place for %s", t[i].hint);
            return buf;
        }
    return "";
}

/* Class names: opts' (a file or text), else config.json's, else the
   file's "labels" metadata when it names every class. */
static vit_result vit__labels_resolve(vit__ld *L, const vit__cfg *cj, const vit_load_opts *o, vit_arena *text,
                                      vit_arena *names) {
    vit_model *m = L->m;
    int32_t classes = m->kind == VIT_KIND_VIT ? m->cfg.num_classes : 0;
    const char *src = "labels", *buf = NULL, *meta;
    size_t n = 0;
    vit_result r;
    (void)text; /* unused under VIT_NO_STDIO */

    /* the caller's labels first, */
    if (o && (o->labels_text || o->labels_path)) {
        if (o->labels_path) src = o->labels_path;
        if (o->labels_text) {
            buf = o->labels_text;
            n = o->labels_size;
        } else {
#ifndef VIT_NO_STDIO
            if ((r = vit__read_file(o->labels_path, (size_t)64 << 20, text, &n)) != VIT_OK) return r;
            buf = (const char *)text->base;
#else
            return vit__fail(VIT_ERR_UNSUPPORTED, "%s: labels_path needs file I/O (built with VIT_NO_STDIO)", src);
#endif
        }
        if (!classes)
            return vit__fail(VIT_ERR_ARG, "%s: class labels given, but %s is not a ViT classifier", src, L->st.src);
        if ((r = vit__labels_parse(names, src, buf, n, '\n', &L->labels, &L->n_labels)) != VIT_OK) return r;
        if (L->n_labels != classes)
            return vit__fail(VIT_ERR_FORMAT, "%s: %d labels (lines) for the %d classes of %s", src, (int)L->n_labels,
                             (int)classes, L->st.src);
        vit__note(L, "; labels from %s", src);
        return VIT_OK;
    }

    /* then a config.json's, */
    if (cj->st.src && cj->n_labels && classes) {
        if (cj->n_labels != classes)
            return vit__fail(VIT_ERR_FORMAT, "%s: '%s' names %d classes, %s's classifier has %d", cj->st.src,
                             cj->labels_key, (int)cj->n_labels, L->st.src, (int)classes);
        L->labels = cj->labels;
        L->n_labels = cj->n_labels;
        vit__note(L, "; labels from %s (%s)", cj->st.src, cj->labels_key);
        return VIT_OK;
    }

    /* then the file's own metadata, kept only when it names every class */
    meta = vit__meta(&L->st, "labels");
    if (meta && classes &&
        vit__labels_parse(names, "labels", meta, strlen(meta), ',', &L->labels, &L->n_labels) == VIT_OK &&
        L->n_labels != classes) {
        L->labels = NULL; /* a list that does not name every class is only metadata */
        L->n_labels = 0;
    }
    vit__note(L, L->n_labels ? "; labels from the file's metadata" : "; no labels");
    return VIT_OK;
}

/* transformers' preprocessor_config.json beside the model file, if there
   is one (none from memory, or with no_config_search). */
static vit_result vit__pp_load(vit__cfg *c, vit_arena *text_arena, const vit_load_opts *o, const char *path, char *name,
                               size_t name_size) {
    c->center_crop = -1;
    c->resample = -1;
#ifndef VIT_NO_STDIO
    if (path && !(o && o->no_config_search)) {
        size_t d = strlen(path), n = 0;
        FILE *f;
        vit_result r;
        while (d > 0 && path[d - 1] != '/' && path[d - 1] != '\\') d--;
        if (d + 25 > name_size)
            return vit__fail(VIT_ERR_ARG, "%s: no room for the name of preprocessor_config.json beside it", path);
        memcpy(name, path, d);
        memcpy(name + d, "preprocessor_config.json", 25);
        if (!(f = fopen(name, "rb"))) return VIT_OK;
        fclose(f);
        if ((r = vit__read_file(name, (size_t)16 << 20, text_arena, &n)) != VIT_OK) return r;
        c->st.src = name;
        c->pp = 1;
        return vit__cfg_parse(c, (const char *)text_arena->base, n);
    }
#else
    (void)text_arena; (void)o; (void)path; (void)name; (void)name_size;
#endif
    return VIT_OK;
}

/* The preprocessing a checkpoint's configs ask for, as metadata that
   vit_model_preprocess reads: input_mean, input_std, input_crop_pct,
   input_interpolation and input_crop_mode from timm's pretrained_cfg (with
   timm's defaults, bicubic and 0.875, for what it leaves out);
   input_resize, input_crop (absent: no crop), input_crop_offset (floor:
   transformers' center_crop rounds the offset down) and the rest from
   transformers' preprocessor_config.json. */
static void vit__input_meta(vit__ld *L, const vit__cfg *cj, const vit__cfg *pp) {
    static const char *const pil[] = {"nearest", "lanczos", "bilinear", "bicubic", "box", "hamming"};
    const char *mean = pp->mean[0] ? pp->mean : cj->mean, *std = pp->std[0] ? pp->std : cj->std;
    if (mean[0]) { L->xk[L->nx] = "input_mean"; L->xv[L->nx++] = mean; }
    if (std[0]) { L->xk[L->nx] = "input_std"; L->xv[L->nx++] = std; }
    if (cj->crop[0] || cj->pcfg) { L->xk[L->nx] = "input_crop_pct"; L->xv[L->nx++] = cj->crop[0] ? cj->crop : "0.875"; }
    if (cj->interp[0] || cj->pcfg) {
        L->xk[L->nx] = "input_interpolation";
        L->xv[L->nx++] = cj->interp[0] ? cj->interp : "bicubic";
    } else if (pp->pp) {
        /* transformers' processors default to bilinear (ViT's) when silent */
        L->xk[L->nx] = "input_interpolation";
        L->xv[L->nx++] = pil[pp->resample >= 0 && pp->resample <= 5 ? pp->resample : 2];
    }
    if (cj->crop_mode[0]) { L->xk[L->nx] = "input_crop_mode"; L->xv[L->nx++] = cj->crop_mode;
    } else if (pp->size_h || pp->size_w) {
        L->xk[L->nx] = "input_crop_mode";
        L->xv[L->nx++] = "squash";
    } /* size {height, width}: SigLIP, ViT */
    if (!pp->pp) return;
    if (pp->size_h || pp->size_w) {
        if (pp->size_h == pp->size_w) snprintf(L->xbuf[0], sizeof L->xbuf[0], "%d", (int)pp->size_h);
        else snprintf(L->xbuf[0], sizeof L->xbuf[0], "%d,%d", (int)pp->size_h, (int)pp->size_w);
    } else if (pp->size_short) snprintf(L->xbuf[0], sizeof L->xbuf[0], "%d", (int)pp->size_short);
    if (L->xbuf[0][0]) { L->xk[L->nx] = "input_resize"; L->xv[L->nx++] = L->xbuf[0]; }
    if (pp->center_crop != 0 && pp->crop_size) {
        snprintf(L->xbuf[1], sizeof L->xbuf[1], "%d", (int)pp->crop_size);
        L->xk[L->nx] = "input_crop"; L->xv[L->nx++] = L->xbuf[1];
        L->xk[L->nx] = "input_crop_offset"; L->xv[L->nx++] = "floor";
    }
}

/* 1 when a ViT naming says tensor `name` is not the model's (a CLIP
   file's text tower, a mask token): its ';'-separated prefixes. */
static int vit__ignored(const vit_model *m, const char *name) {
    const char *p = m->kind == VIT_KIND_VIT ? ((const vit__vit_naming *)vit__naming_of(m))->ignore : NULL;
    while (p && *p) {
        size_t len = strcspn(p, ";");
        if (!strncmp(name, p, len)) return 1;
        p += len + (p[len] == ';');
    }
    return 0;
}

static vit_result vit__load(vit_model *m, const unsigned char *buf, size_t size, const char *src,
                            const vit_load_opts *o, const char *path, int writable) {
    vit__ld L;
    vit__cfg cj, pp;
    vit_arena cfg_text, pp_text, lab_text, lab_names, name_mem;
    char *cfg_name = NULL, *pp_name = NULL; /* the config files' names, for their messages: sized from path */
    size_t name_size = (path ? strlen(path) : 0) + (o && o->config_path ? strlen(o->config_path) : 0) + 32;
    vit_result r;
    const char *s;
    int i;
    memset(&L, 0, sizeof L);
    memset(&name_mem, 0, sizeof name_mem);
    memset(&cj, 0, sizeof cj);
    memset(&pp, 0, sizeof pp);
    memset(&cfg_text, 0, sizeof cfg_text);
    memset(&pp_text, 0, sizeof pp_text);
    memset(&lab_text, 0, sizeof lab_text);
    memset(&lab_names, 0, sizeof lab_names);

    /* the header, then the model's description: vit.h's metadata, else a config.json */
    cj.fc_norm = -1;
    L.st.src = src;
    L.m = m;
    L.allow_nonfinite = o && o->allow_nonfinite;
    L.writable = writable;
    if ((r = vit__st_parse(&L.st, buf, size)) != VIT_OK) goto done;
    L.act_bits = 8; /* I8 products round x to 8 bits unless the file says 7 (WEIGHTS FORMAT) */
    if ((s = vit__meta(&L.st, "activation_bits")) != NULL && strcmp(s, "8")) {
        if (strcmp(s, "7")) {
            r = vit__fail(VIT_ERR_FORMAT,
                          "%s: __metadata__ activation_bits is '%s'; I8 products round x to 8 or 7 bits", src, s);
            goto done;
        }
        L.act_bits = 7;
    }
    s = vit__meta(&L.st, "format");
    if (s && !strcmp(s, "vit.h")) {
        if (o && (o->config_path || o->config_text)) {
            r = vit__fail(VIT_ERR_ARG, "%s has vit.h metadata; a config.json is only read for files without", src);
            goto done;
        }
        if ((r = vit__read_config(&L)) != VIT_OK) goto done;
        if (m->kind == VIT_KIND_VIT) {
            /* a classifier file's prefix, and timm's fc_norm for the final LayerNorm */
            const vit__vit_naming *nm = (const vit__vit_naming *)vit__naming_of(m);
            char n[256];
            snprintf(n, sizeof n, "%s%s", nm->pfx, nm->patch.cls);
            if (nm->pfx[0] && vit__entry_find(&L.st, n)) snprintf(L.pfx, sizeof L.pfx, "%s", nm->pfx);
            snprintf(n, sizeof n, "%s%s.weight", L.pfx, nm->norm_alt ? nm->norm_alt : "");
            if (nm->norm_alt && vit__entry_find(&L.st, n)) L.norm = nm->norm_alt;
            if (o && o->heads > 0 && o->heads != m->cfg.heads) {
                r = vit__fail(VIT_ERR_ARG, "%s: its metadata says num_heads=%d, the caller %d", src, (int)m->cfg.heads,
                              (int)o->heads);
                goto done;
            }
        }
    } else {
        if ((r = vit_arena_init_alloc(&name_mem, 2 * name_size + 2 * VIT_ALIGN)) != VIT_OK) goto done;
        cfg_name = (char *)vit_arena_alloc(&name_mem, name_size);
        pp_name = (char *)vit_arena_alloc(&name_mem, name_size);
        if ((r = vit__cfg_load(&cj, &cfg_text, o, path, cfg_name, name_size)) != VIT_OK ||
            (r = vit__infer(&L, &cj, o)) != VIT_OK)
            goto done;
        /* timm's preprocessing, for programs that read vit_model_meta */
        if ((r = vit__pp_load(&pp, &pp_text, o, path, pp_name, name_size)) != VIT_OK) goto done;
        vit__input_meta(&L, &cj, &pp);
    }

    /* labels; then bind twice: once counting the weights' bytes, once into one allocation of that size */
    if ((r = vit__labels_resolve(&L, &cj, o, &lab_text, &lab_names)) != VIT_OK) goto done;
    if (L.inferred[0] && vit__log_fn) vit__log_fn(vit__log_user, L.inferred);
    vit_arena_init(&m->arena, NULL, 0);
    if ((r = vit__bind_all(&L)) != VIT_OK) goto done;
    for (i = 0; i < L.st.n; i++)
        if (!L.st.e[i].used && !vit__ignored(m, L.st.e[i].name)) {
            r = vit__fail(VIT_ERR_FORMAT, "%s: unexpected tensor '%s' for a %s model with naming '%s'%s", src,
                          L.st.e[i].name, vit_kind_name(m->kind), m->naming, vit__unsupported_hint(L.st.e[i].name));
            goto done;
        }
    if ((r = vit_arena_init_alloc(&m->arena, m->arena.peak ? m->arena.peak : 1)) != VIT_OK) goto done;
    for (i = 0; i < L.st.n; i++) L.st.e[i].used = 0;
    r = vit__bind_all(&L);

done:
    vit_arena_free(&L.st.tmp);
    vit_arena_free(&L.pack);
    vit_arena_free(&cj.st.tmp);
    vit_arena_free(&pp.st.tmp);
    vit_arena_free(&cfg_text);
    vit_arena_free(&pp_text);
    vit_arena_free(&lab_text);
    vit_arena_free(&lab_names);
    vit_arena_free(&name_mem);
    return r;
}

VITDEF vit_result vit_model_load_memory_ex(vit_model *m, const void *data, size_t size, const vit_load_opts *opts) {
    vit_result r;
    if (!m || !data) return vit__fail(VIT_ERR_ARG, "vit_model_load_memory: NULL argument");
    memset(m, 0, sizeof *m);
    r = vit__load(m, (const unsigned char *)data, size, "<memory>", opts, NULL, 0);
    if (r != VIT_OK) vit_model_free(m);
    return r;
}

VITDEF vit_result vit_model_load_memory(vit_model *m, const void *data, size_t size) {
    return vit_model_load_memory_ex(m, data, size, NULL);
}

#ifndef VIT_NO_STDIO
VITDEF vit_result vit_model_load_file(vit_model *m, const char *path) { return vit_model_load_file_ex(m, path, NULL); }

VITDEF vit_result vit_model_load_file_ex(vit_model *m, const char *path, const vit_load_opts *opts) {
    vit_result r;
    const unsigned char *buf = NULL;
    size_t size;
    if (!m || !path) return vit__fail(VIT_ERR_ARG, "vit_model_load_file: NULL argument");
    memset(m, 0, sizeof *m);
    if ((r = vit__file_size(path, &size)) != VIT_OK) return r;
    if (size == 0) return vit__fail(VIT_ERR_FORMAT, "%s: empty file", path);
#ifdef VIT__HAVE_MMAP
    if (!(opts && opts->read_whole)) {
        /* Mapped privately: weights are used in place, so loading costs no
           copy; dense layers' weights are packed in place (unless
           keep_layout), their pages becoming private copies of the same
           size, and the rest stay shared between processes. */
        int fd = open(path, O_RDONLY);
        if (fd < 0) return vit__fail(VIT_ERR_IO, "%s: cannot open (%s)", path, strerror(errno));
        m->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        close(fd);
        if (m->map == MAP_FAILED) {
            m->map = NULL;
            return vit__fail(VIT_ERR_IO, "%s: cannot map its %zu bytes (%s)", path, size, strerror(errno));
        }
        m->map_size = size;
        buf = (const unsigned char *)m->map;
    }
#endif
    if (!buf) {
        if ((r = vit__read_file(path, (size_t)-1 - 1, &m->file_buf, &size)) != VIT_OK) return r;
        buf = m->file_buf.base;
    }
    r = vit__load(m, buf, size, path, opts, path, !(opts && opts->keep_layout));
    if (r != VIT_OK) vit_model_free(m);
    return r;
}
#endif

VITDEF void vit_model_free(vit_model *m) {
    if (!m) return;
    vit_arena_free(&m->arena);
    vit_arena_free(&m->file_buf);
    vit_arena_free(&m->extra);
#ifdef VIT__HAVE_MMAP
    if (m->map) munmap(m->map, m->map_size);
#endif
    memset(m, 0, sizeof *m);
}

/* ---- model: forward ---- */

static vit_result vit__dispatch(const vit_model *m, vit_arena *act, const vit_tensor *x, const vit_forward_opts *opts,
                                vit_tensor *out) {
    if ((int)m->kind < 0 || (int)m->kind >= VIT_KIND_COUNT)
        return vit__fail(VIT_ERR_ARG, "model: unknown kind %d", (int)m->kind);
    return vit__kinds[m->kind].run(m, act, x, opts, out);
}

/* What vit_model_forward and vit_model_memory check first: a loaded model
   (not one zeroed by a failed load or vit_model_free, whose sizes are 0)
   and an input of 1..VIT_MAX_DIMS positive dimensions. */
static vit_result vit__check_call(const vit_model *m, const vit_tensor *x, const char *who) {
    int32_t i;
    if (!m->arena.base)
        return vit__fail(VIT_ERR_ARG, "%s: the model is not loaded (zeroed by a failed load or vit_model_free)", who);
    if (x->ndim < 1 || x->ndim > VIT_MAX_DIMS)
        return vit__fail(VIT_ERR_SHAPE, "%s: input has %d dimensions (1 to %d)", who, (int)x->ndim, VIT_MAX_DIMS);
    for (i = 0; i < x->ndim; i++)
        if (x->shape[i] < 1)
            return vit__fail(VIT_ERR_SHAPE, "%s: input dimension %d is %d", who, (int)i, (int)x->shape[i]);
    return VIT_OK;
}

VITDEF vit_result vit_model_forward(const vit_model *m, vit_arena *act, const vit_tensor *x,
                                    const vit_forward_opts *opts, vit_tensor *out) {
    size_t i, n, mark;
    vit_result r;
    vit_tensor y;
    if (!m || !act || !x || !out || !x->data) return vit__fail(VIT_ERR_ARG, "vit_model_forward: NULL argument");
    if (vit_arena_counting(act))
        return vit__fail(
            VIT_ERR_ARG,
            "vit_model_forward: act is a counting arena (no buffer); size one with vit_model_memory, then allocate it");
    if ((r = vit__check_call(m, x, "vit_model_forward")) != VIT_OK) return r;
    n = vit_tensor_numel(x);
    if (!vit__all_finite(x->data, n))
        for (i = 0; i < n; i++)
            if (!isfinite(x->data[i]))
                return vit__fail(VIT_ERR_NONFINITE, "vit_model_forward: input element %zu is %s", i,
                                 isnan(x->data[i]) ? "NaN" : "infinite");
    /* On failure the arena is rewound and *out is untouched. */
    mark = vit_arena_mark(act);
    r = vit__dispatch(m, act, x, opts, &y);
    if (r != VIT_OK) {
        vit_arena_rewind(act, mark);
        return r;
    }
    *out = y;
    return VIT_OK;
}

VITDEF vit_result vit_model_memory(const vit_model *m, const vit_tensor *x, const vit_forward_opts *opts,
                                   size_t *act_bytes) {
    vit_arena counter;
    vit_tensor probe, y, maps[1024]; /* depth <= 1024, checked at load */
    vit_forward_opts o;
    vit_result r;
    if (!m || !x || !act_bytes) return vit__fail(VIT_ERR_ARG, "vit_model_memory: NULL argument");
    if ((r = vit__check_call(m, x, "vit_model_memory")) != VIT_OK) return r;
    vit_arena_init(&counter, NULL, 0);
    probe = *x;
    probe.data = (float *)(uintptr_t)VIT_ALIGN; /* never read while counting */
    memset(&o, 0, sizeof o);
    if (opts) o = *opts;
    if (o.attn) o.attn = maps;
    if ((r = vit__dispatch(m, &counter, &probe, &o, &y)) != VIT_OK) return r;
    /* + VIT_ALIGN: a caller's buffer may need that much to align its start. */
    *act_bytes = counter.peak + VIT_ALIGN;
    return VIT_OK;
}

VITDEF int32_t vit_model_prefix_tokens(const vit_model *m) {
    return m && m->kind == VIT_KIND_VIT ? vit__prefix(&m->cfg) : 0;
}

VITDEF vit_result vit_model_input_shape(const vit_model *m, int32_t B, int32_t n, int32_t w, int32_t *ndim,
                                        int32_t shape[VIT_MAX_DIMS]) {
    if (!m || !ndim || !shape) return vit__fail(VIT_ERR_ARG, "vit_model_input_shape: NULL argument");
    if ((int)m->kind < 0 || (int)m->kind >= VIT_KIND_COUNT)
        return vit__fail(VIT_ERR_ARG, "vit_model_input_shape: unknown kind %d", (int)m->kind);
    if (B < 1 || n < 1 || w < 1)
        return vit__fail(VIT_ERR_ARG, "vit_model_input_shape: B %d, n %d, w %d must be >= 1", (int)B, (int)n, (int)w);
    return vit__kinds[m->kind].input(m, B, n, w, ndim, shape);
}

VITDEF size_t vit_model_describe(const vit_model *m, char *buf, size_t size) {
    const vit__kind_def *d;
    const vit__key *k;
    vit__buf b;
    b.p = buf; b.size = buf ? size : 0; b.len = 0;
    if (b.size) buf[0] = 0;
    if (!m || (int)m->kind < 0 || (int)m->kind >= VIT_KIND_COUNT) {
        vit__bprintf(&b, "no model\n");
        return b.len;
    }

    /* the kind, its naming and size, and how its dense layers are kept */
    d = &vit__kinds[m->kind];
    vit__bprintf(&b, "%s (naming %s), %lld weights\n", d->name, m->naming, (long long)m->n_params);
    if (m->n_kept[VIT_DTYPE_BF16] || m->n_kept[VIT_DTYPE_I8]) {
        const char *ab = vit_model_meta(m, "activation_bits");
        vit__bprintf(&b, "  dense layers kept in %s: %lld of the weights%s%s; the rest F32\n",
                     m->n_kept[VIT_DTYPE_I8] ? (m->n_kept[VIT_DTYPE_BF16] ? "BF16 and I8" : "I8") : "BF16",
                     (long long)(m->n_kept[VIT_DTYPE_BF16] + m->n_kept[VIT_DTYPE_I8]),
                     m->n_kept[VIT_DTYPE_I8] ? " (I8: a scale per output row, activations quantised per row as they "
                                               "run, to "
                                             : "",
                     m->n_kept[VIT_DTYPE_I8] ? (ab && !strcmp(ab, "7") ? "7 bits)" : "8 bits)") : "");
    }
    if (m->inferred) vit__bprintf(&b, "  %s\n", m->inferred);

    /* every hyperparameter under its metadata key */
    if (d->keys->key) vit__bprintf(&b, " ");
    for (k = d->keys; k->key; k++) {
        const char *at = (const char *)m + k->off;
        int32_t i;
        float f;
        if (k->type == 'f' || k->type == 'p') {
            memcpy(&f, at, sizeof f);
            vit__bprintf(&b, " %s=%g", k->key, (double)f);
        } else {
            memcpy(&i, at, sizeof i);
            if (k->type == 'i') vit__bprintf(&b, " %s=%d", k->key, (int)i);
            else {
                const char *w = k->words;
                for (; i > 0 && w; i--) w = strchr(w, ',') ? strchr(w, ',') + 1 : NULL;
                vit__bprintf(&b, " %s=%.*s", k->key, w ? (int)strcspn(w, ",") : 1, w ? w : "?");
            }
        }
    }
    if (d->keys->key) vit__bprintf(&b, "\n");

    /* the kind's own lines, then the labels */
    d->describe(m, &b);
    if (m->n_labels)
        vit__bprintf(&b, "  labels: %s, %s, ... %s\n", vit_model_label(m, 0),
                     m->n_labels > 1 ? vit_model_label(m, 1) : "", vit_model_label(m, m->n_labels - 1));
    return b.len;
}
/* ---- model: reverse pass ---- */
/* The gradient of target = sum(out * seed) with respect to every layer's
   attention probabilities and tokens and the input, for a ViT of F32
   weights: a forward that keeps what the chain rule reads (each block's
   input, q k v before qk-norm and the rotary embedding, probabilities,
   attention output, the residual between the branches, the MLP's
   pre-activation; the head's pooled vectors; what a LayerNorm inside the
   attention or the MLP reads is made again from these), then every step
   reversed in the opposite order through
   the reverse kernels, the products dx = dy W with W read where it lies
   (vit__mm.nn). No weight gradients. */

typedef struct vit__rev_block { /* what one block's reverse reads, all (B*T, .) rows */
    float *x;                   /* (C) its input */
    float *qkv;                 /* (3C) q, k, v before qk-norm and the rotary embedding */
    float *att;                 /* (B, NH, T, T) probabilities */
    float *ao;                  /* (C) attention output, before the projection (and EVA-CLIP's LayerNorm) */
    float *mid;                 /* (C) x + ls1 * attention: the second LayerNorm's input */
    float *u;                   /* (H1) the MLP's pre-activation */
} vit__rev_block;

typedef struct vit__rev_head { /* what the pool and head's reverse reads */
    float *tok;                /* (B, T, C) after the blocks */
    float *pooled;             /* (B, C) before the final LayerNorm (norm on the pooled vector) */
    float *dist;               /* (B, C) DeiT's distillation token, likewise */
    float *pre;                /* (B, R) pre_logits' tanh output */
    float *feat;               /* (B, C) what the head takes */
    float *kv, *probs, *o, *z, *u, *q; /* attention pool: (B*Np, 2C), (B, NH, Np), (B, C), (B, C), (B, H), (B, C) */
} vit__rev_head;

/* y = x W^T + b, all rows, F32 weights (checked by the caller). */
static void vit__rev_dense(float *y, const float *x, const vit_tensor *w, const vit_tensor *b, int M, int K, int N) {
    vit__dense(y, x, w, b->data, M, K, N, NULL);
}

/* dx (M, K) = dy (M, N) W, W (N, K) as nn.Linear holds it. */
static void vit__rev_linear(float *dx, const float *dy, const vit_tensor *w, int M, int N, int K) {
    vit__mm p = vit__mm_nn(dx, dy, w->data, M, N, K);
    p.nnp = w->pack ? w->pack->panel : 0;
    vit__matmul(&p);
}

/* dy *= g column by column (layer scale), rows (rows, C) into d. */
static void vit__rev_scale(float *d, const float *dy, const float *g, int rows, int C) {
    int r;
    for (r = 0; r < rows; r++) vit_k_mul(d + (size_t)r * C, dy + (size_t)r * C, g, C);
}

/* q and k as the attention reads them, from qkv (B*T, 3C) into qn: the
   forward's vit__mha_qk on a copy (qkv stays as the product gave it). */
static void vit__rev_qk(const vit_config *c, const vit_mha_weights *w, float *qn, const float *qkv, int32_t B,
                        int32_t T) {
    vit_mha_params mp;
    memset(&mp, 0, sizeof mp);
    mp.dim = c->dim; mp.heads = c->heads; mp.qk_norm = c->qk_norm; mp.qk_eps = c->ln_eps;
    memcpy(qn, qkv, (size_t)B * T * 3 * c->dim * sizeof(float));
    vit__mha_qk(qn, &mp, w, B, T);
}

/* One block forward, keeping s's tensors; y its output. */
static vit_result vit__rev_block_fwd(const vit_model *m, vit_arena *a, const vit_block_weights *w,
                                     const vit__rev_block *s, float *y, int32_t B, int32_t T) {
    const vit_config *c = &m->cfg;
    int32_t C = c->dim, NH = c->heads, HS = C / NH, H1 = c->glu ? 2 * c->mlp_dim : c->mlp_dim, rows = B * T;
    size_t mark = vit_arena_mark(a);
    float scale = c->scale_after_softmax ? 1.0f : 1.0f / sqrtf((float)HS);
    float post = c->scale_after_softmax ? 1.0f / sqrtf((float)C) : 1.0f, *scratch = NULL;
    int slots = 1, tiles, per;
    vit_tensor h, qn, g, aon;
    vit_result r;
    vit__att_tiles(T, 0, &tiles, &per);
    if ((r = vit__tensor4(a, &h, 2, rows, C, 1, 1)) != VIT_OK ||
        (r = vit__tensor4(a, &aon, 2, rows, c->attn_norm ? C : 1, 1, 1)) != VIT_OK ||
        (r = vit__tensor4(a, &qn, 2, rows, c->qk_norm || w->attn.rope ? 3 * C : 1, 1, 1)) != VIT_OK ||
        (r = vit__tensor4(a, &g, 2, rows, c->mlp_dim, 1, 1)) != VIT_OK ||
        (r = vit__att_scratch(a, T, HS, 1, 0, B * NH * tiles, &scratch, &slots)) != VIT_OK)
        return r;
    if (!vit_arena_counting(a)) {
        vit_attn_shape sh = vit__attn_shape(B, T, NH, HS, 3 * C, scale, post);
        const float *qkv = s->qkv;
        vit__att at;
        vit__epi e;
        vit__mm p;

        /* LN1, q k v (kept before qk-norm), attention keeping the probabilities */
        vit_k_layernorm(h.data, s->x, w->ln1_w.data, w->ln1_b.data, rows, C, c->ln_eps);
        vit__rev_dense(s->qkv, h.data, &w->attn.qkv_w, &w->attn.qkv_b, rows, C, 3 * C);
        if (c->qk_norm || w->attn.rope) {
            vit__rev_qk(c, &w->attn, qn.data, s->qkv, B, T);
            qkv = qn.data;
        }
        at = vit__att_of(s->ao, s->att, qkv, qkv + C, qkv + 2 * C, &sh);
        at.bias = w->attn.rel_bias.data; /* BEiT's relative position bias: a constant of the scores */
        at.bidx = w->attn.rel_index;
        at.R = w->attn.rel_bias.data ? w->attn.rel_bias.shape[1] : 0;
        vit__attention(&at, scratch, slots);

        /* mid = x + ls1 * proj(ao) (EVA-CLIP: of LayerNorm(ao)), LN2, the MLP's pre-activation kept,
           y = mid + ls2 * fc2(act(u)) (EVA-02: of LayerNorm(act(u))) */
        if (c->attn_norm)
            vit_k_layernorm(aon.data, s->ao, w->attn.norm_w.data, w->attn.norm_b.data, rows, C, c->ln_eps);
        p = vit__mm_w(s->mid, c->attn_norm ? aon.data : s->ao, &w->attn.out_w, w->attn.out_b.data, rows, C, C, NULL);
        e.act = VIT__EPI_NONE; e.g = c->layer_scale ? w->ls1.data : NULL; e.r = s->x; e.ldr = C;
        p.e = &e;
        vit__matmul(&p);
        vit_k_layernorm(h.data, s->mid, w->ln2_w.data, w->ln2_b.data, rows, C, c->ln_eps);
        vit__rev_dense(s->u, h.data, &w->mlp.fc1_w, &w->mlp.fc1_b, rows, C, H1);
        if (c->glu) vit_k_glu(g.data, s->u, rows, c->mlp_dim, c->act);
        else vit_k_act(g.data, s->u, rows * c->mlp_dim, c->act);
        if (c->mlp_norm)
            vit_k_layernorm(g.data, g.data, w->mlp.norm_w.data, w->mlp.norm_b.data, rows, c->mlp_dim, c->ln_eps);
        p = vit__mm_w(y, g.data, &w->mlp.fc2_w, w->mlp.fc2_b.data, rows, c->mlp_dim, C, NULL);
        e.g = c->layer_scale ? w->ls2.data : NULL; e.r = s->mid;
        p.e = &e;
        vit__matmul(&p);
    }
    vit_arena_rewind(a, mark);
    return VIT_OK;
}

/* One block reversed: dx from dy (both (B*T, C); they may not alias);
   datt, unless NULL, gets the gradient of the probabilities, dln1 that of
   the first LayerNorm's output (Grad-CAM's activations). With dx NULL it
   stops at datt (LeGrad asks no more of a layer). */
static vit_result vit__rev_block_back(const vit_model *m, vit_arena *a, const vit_block_weights *w,
                                      const vit__rev_block *s, const float *dy, float *dx, float *datt, float *dln1,
                                      int32_t B, int32_t T) {
    const vit_config *c = &m->cfg;
    int32_t C = c->dim, NH = c->heads, HS = C / NH, H = c->mlp_dim, H1 = c->glu ? 2 * H : H, rows = B * T, t;
    size_t mark = vit_arena_mark(a), slot = (size_t)T * T + 3 * (size_t)HS * T;
    float scale = c->scale_after_softmax ? 1.0f : 1.0f / sqrtf((float)HS);
    float post = c->scale_after_softmax ? 1.0f / sqrtf((float)C) : 1.0f;
    int slots = vit__threads() < B * NH ? vit__threads() : B * NH;
    vit_tensor dm, dg, du, dt, dq, qn, rinv, gp;
    vit_result r;
    float *scr;
    if ((r = vit__tensor4(a, &dm, 2, rows, C, 1, 1)) != VIT_OK ||
        (r = vit__tensor4(a, &dg, 2, rows, H > C ? H : C, 1, 1)) != VIT_OK ||
        (r = vit__tensor4(a, &du, 2, rows, H1 > 3 * C ? H1 : 3 * C, 1, 1)) != VIT_OK ||
        (r = vit__tensor4(a, &dt, 2, rows, C, 1, 1)) != VIT_OK ||
        (r = vit__tensor4(a, &dq, 2, rows, 3 * C, 1, 1)) != VIT_OK ||
        (r = vit__tensor4(a, &qn, 2, rows, c->qk_norm || w->attn.rope ? 3 * C : 1, 1, 1)) != VIT_OK ||
        (r = vit__tensor4(a, &rinv, 2, w->attn.rope ? (w->attn.rope_heads ? NH : 1) * w->attn.rope_n : 1, 2 * HS, 1,
                          1)) != VIT_OK ||
        (r = vit__tensor4(a, &gp, 2, rows, c->mlp_norm || c->attn_norm ? (H > C ? H : C) : 1, 1, 1)) != VIT_OK)
        return r;
    /* the attention's scratch, a slot per thread: sized by the thread count when counted, and
       when run with more threads than that, the slots that fit (as the forward's attention) */
    if (!vit_arena_counting(a)) {
        size_t start = vit__arena_next(a), room = a->size > start && start >= a->used ? a->size - start : 0;
        if (room / (slot * sizeof(float)) < (size_t)slots)
            slots = room / (slot * sizeof(float)) > 1 ? (int)(room / (slot * sizeof(float))) : 1;
    }
    if (!(scr = (float *)vit_arena_alloc(a, (size_t)slots * slot * sizeof(float)))) return VIT_ERR_OOM;
    if (!vit_arena_counting(a)) {
        const float *qkv = s->qkv;
        vit__attb ab;

        /* the MLP branch: dm = dy ls2, through fc2, the activation and fc1, then LN2 onto the residual's dy */
        if (c->layer_scale) vit__rev_scale(dm.data, dy, w->ls2.data, rows, C);
        else memcpy(dm.data, dy, (size_t)rows * C * sizeof(float));
        vit__rev_linear(dg.data, dm.data, &w->mlp.fc2_w, rows, C, H);
        if (c->mlp_norm) { /* EVA-02's LayerNorm before fc2, reversed on the activation's output (made again) */
            if (c->glu) vit_k_glu(gp.data, s->u, rows, H, c->act);
            else vit_k_act(gp.data, s->u, rows * H, c->act);
            memset(du.data, 0, (size_t)rows * H * sizeof(float));
            vit_k_layernorm_back(du.data, gp.data, w->mlp.norm_w.data, dg.data, rows, H, c->ln_eps);
            memcpy(dg.data, du.data, (size_t)rows * H * sizeof(float));
        }
        if (c->glu) vit_k_glu_back(du.data, s->u, dg.data, rows, H, c->act);
        else vit_k_act_back(du.data, s->u, dg.data, rows * H, c->act);
        vit__rev_linear(dm.data, du.data, &w->mlp.fc1_w, rows, H1, C);
        memcpy(dt.data, dy, (size_t)rows * C * sizeof(float));
        vit_k_layernorm_back(dt.data, s->mid, w->ln2_w.data, dm.data, rows, C, c->ln_eps);

        /* the attention branch: d ao = (dt ls1) W_o, then the attention reversed into dq */
        if (c->layer_scale) vit__rev_scale(dm.data, dt.data, w->ls1.data, rows, C);
        else memcpy(dm.data, dt.data, (size_t)rows * C * sizeof(float));
        vit__rev_linear(dg.data, dm.data, &w->attn.out_w, rows, C, C); /* dg as (rows, C) now */
        if (c->attn_norm) { /* EVA-CLIP's LayerNorm before the projection, reversed */
            memset(gp.data, 0, (size_t)rows * C * sizeof(float));
            vit_k_layernorm_back(gp.data, s->ao, w->attn.norm_w.data, dg.data, rows, C, c->ln_eps);
            memcpy(dg.data, gp.data, (size_t)rows * C * sizeof(float));
        }
        if (c->qk_norm || w->attn.rope) {
            vit__rev_qk(c, &w->attn, qn.data, s->qkv, B, T);
            qkv = qn.data;
        }
        {
            vit_attn_shape sh = vit__attn_shape(B, T, NH, HS, 3 * C, scale, post);
            ab.dq = dq.data; ab.dk = dq.data + C; ab.dv = dq.data + 2 * C; ab.datt = datt; ab.scratch = scr;
            ab.dout = dg.data; ab.q = qkv; ab.k = qkv + C; ab.v = qkv + 2 * C; ab.att = s->att; ab.s = &sh;
            ab.datt_only = dx == NULL;
            vit__attention_back(&ab, slots);
        }
        if (!dx) {
            vit_arena_rewind(a, mark);
            return VIT_OK;
        }

        /* the rotary embedding reversed: each pair turned back by its angle, the sines' sign flipped */
        if (w->attn.rope) {
            int32_t i2, j;
            for (i2 = 0; i2 < (w->attn.rope_heads ? NH : 1) * w->attn.rope_n; i2++)
                for (j = 0; j < 2 * HS; j++)
                    rinv.data[(size_t)i2 * 2 * HS + j] =
                        (j < HS ? 1.0f : -1.0f) * w->attn.rope[(size_t)i2 * 2 * HS + j];
            for (t = 0; t < B; t++) {
                float *q = dq.data + ((size_t)t * T + w->attn.rope_first) * 3 * C;
                vit__rope_apply(q, &w->attn, rinv.data, NH, HS, 3 * C);
                vit__rope_apply(q + C, &w->attn, rinv.data, NH, HS, 3 * C);
            }
        }

        /* qk-norm reversed per token and head, then q k v's product and LN1 onto the residual's dt */
        if (c->qk_norm) {
            memset(du.data, 0, (size_t)rows * 3 * C * sizeof(float));
            for (t = 0; t < rows; t++) {
                size_t o = (size_t)t * 3 * C;
                vit_k_layernorm_back(du.data + o, s->qkv + o, w->attn.q_norm_w.data, dq.data + o, NH, HS, c->ln_eps);
                vit_k_layernorm_back(du.data + o + C, s->qkv + o + C, w->attn.k_norm_w.data, dq.data + o + C, NH, HS,
                                     c->ln_eps);
                memcpy(dq.data + o, du.data + o, 2 * (size_t)C * sizeof(float));
            }
        }
        vit__rev_linear(dm.data, dq.data, &w->attn.qkv_w, rows, 3 * C, C);
        if (dln1) memcpy(dln1, dm.data, (size_t)rows * C * sizeof(float));
        memcpy(dx, dt.data, (size_t)rows * C * sizeof(float));
        vit_k_layernorm_back(dx, s->x, w->ln1_w.data, dm.data, rows, C, c->ln_eps);
    }
    vit_arena_rewind(a, mark);
    return VIT_OK;
}

/* The attention pool (vit__attn_pool) forward keeping s's tensors, from
   the normalised patch tokens x (B, Np, C), into pooled (B, C). */
static vit_result vit__rev_pool_fwd(const vit_model *m, vit_arena *a, const vit__rev_head *s, const float *x,
                                    float *pooled, int32_t B, int32_t Np) {
    const vit_config *c = &m->cfg;
    const vit_attn_pool_weights *w = &m->pool_w;
    int32_t C = c->dim, NH = vit__pool_heads(c), HS = C / NH, H = w->mlp.fc1_w.shape[0], bi;
    size_t mark = vit_arena_mark(a);
    vit_tensor h, g;
    vit_heads_shape hs;
    vit_result r;
    if ((r = vit__tensor4(a, &h, 2, B, C, 1, 1)) != VIT_OK ||
        (r = vit__tensor4(a, &g, 2, B, H, 1, 1)) != VIT_OK)
        return r;
    if (!vit_arena_counting(a)) {
        vit__mm p;
        vit__epi e;
        vit__rev_dense(s->q, w->latent.data, &w->q_w, &w->q_b, 1, C, C);
        for (bi = 1; bi < B; bi++) memcpy(s->q + (size_t)bi * C, s->q, (size_t)C * sizeof(float));
        vit__rev_dense(s->kv, x, &w->kv_w, &w->kv_b, B * Np, C, 2 * C);
        hs.B = B; hs.NH = NH; hs.Nq = 1; hs.Nk = Np; hs.HS = HS; hs.ldq = C; hs.ldk = hs.ldv = 2 * C;
        hs.scale = 1.0f / sqrtf((float)HS);
        vit_k_scores(s->probs, s->q, s->kv, &hs);
        vit_k_softmax(s->probs, s->probs, B * NH, Np);
        vit_k_attend(s->o, NULL, s->probs, s->kv + C, &hs);
        vit__rev_dense(s->z, s->o, &w->proj_w, &w->proj_b, B, C, C);
        vit_k_layernorm(h.data, s->z, w->norm_w.data, w->norm_b.data, B, C, c->ln_eps);
        vit__rev_dense(s->u, h.data, &w->mlp.fc1_w, &w->mlp.fc1_b, B, C, H);
        vit_k_act(g.data, s->u, B * H, c->act);
        p = vit__mm_w(pooled, g.data, &w->mlp.fc2_w, w->mlp.fc2_b.data, B, H, C, NULL);
        e.act = VIT__EPI_NONE; e.g = NULL; e.r = s->z; e.ldr = C;
        p.e = &e;
        vit__matmul(&p);
    }
    vit_arena_rewind(a, mark);
    return VIT_OK;
}

/* The attention pool reversed: dx (B, Np, C) from dpooled (B, C). */
static vit_result vit__rev_pool_back(const vit_model *m, vit_arena *a, const vit__rev_head *s, const float *dpooled,
                                     float *dx, int32_t B, int32_t Np) {
    const vit_config *c = &m->cfg;
    const vit_attn_pool_weights *w = &m->pool_w;
    int32_t C = c->dim, NH = vit__pool_heads(c), HS = C / NH, H = w->mlp.fc1_w.shape[0], bi, h, j, d;
    size_t mark = vit_arena_mark(a);
    float scale = 1.0f / sqrtf((float)HS);
    vit_tensor dz, dg, dh, dkv, dp;
    vit_result r;
    memset(&dp, 0, sizeof dp); /* (GCC -O3 saw dp.data read uninitialised through the chain below) */
    if ((r = vit__tensor4(a, &dz, 2, B, C, 1, 1)) != VIT_OK || (r = vit__tensor4(a, &dg, 2, B, H, 1, 1)) != VIT_OK ||
        (r = vit__tensor4(a, &dh, 2, B, C, 1, 1)) != VIT_OK ||
        (r = vit__tensor4(a, &dkv, 2, B * Np, 2 * C, 1, 1)) != VIT_OK ||
        (r = vit__tensor4(a, &dp, 1, Np, 1, 1, 1)) != VIT_OK)
        return r;
    if (!vit_arena_counting(a)) {
        /* pooled = z + MLP(LN(z)): dz = dpooled + LN reversed of the MLP reversed */
        memcpy(dz.data, dpooled, (size_t)B * C * sizeof(float));
        vit__rev_linear(dg.data, dpooled, &w->mlp.fc2_w, B, C, H);
        vit_k_act_back(dg.data, s->u, dg.data, B * H, c->act);
        vit__rev_linear(dh.data, dg.data, &w->mlp.fc1_w, B, H, C);
        vit_k_layernorm_back(dz.data, s->z, w->norm_w.data, dh.data, B, C, c->ln_eps);

        /* z = proj(o); o = per head the probe's probabilities times v; the probe's q takes no gradient */
        vit__rev_linear(dh.data, dz.data, &w->proj_w, B, C, C);
        for (bi = 0; bi < B; bi++)
            for (h = 0; h < NH; h++) {
                const float *pr = s->probs + ((size_t)bi * NH + h) * Np, *dout = dh.data + (size_t)bi * C + h * HS;
                const float *q = s->q + (size_t)bi * C + h * HS;
                for (j = 0; j < Np; j++) {
                    const float *v = s->kv + ((size_t)bi * Np + j) * 2 * C + C + h * HS;
                    float *dv = dkv.data + ((size_t)bi * Np + j) * 2 * C + C + h * HS, g = 0.0f;
                    for (d = 0; d < HS; d++) {
                        g += dout[d] * v[d];
                        dv[d] = pr[j] * dout[d];
                    }
                    dp.data[j] = g;
                }
                vit_k_softmax_back(dp.data, pr, dp.data, 1, Np);
                for (j = 0; j < Np; j++) {
                    float *dk = dkv.data + ((size_t)bi * Np + j) * 2 * C + h * HS;
                    for (d = 0; d < HS; d++) dk[d] = scale * dp.data[j] * q[d];
                }
            }
        vit__rev_linear(dx, dkv.data, &w->kv_w, B * Np, 2 * C, C);
    }
    vit_arena_rewind(a, mark);
    return VIT_OK;
}

/* Pool and head forward from s->tok, keeping s's tensors, into out. */
static vit_result vit__rev_head_fwd(const vit_model *m, vit_arena *a, const vit__rev_head *s, int features,
                                    float *out, int32_t B, int32_t T) {
    const vit_config *c = &m->cfg;
    int32_t C = c->dim, P = vit__prefix(c), first = c->pool == VIT_POOL_MEAN ? 0 : P, bi, l, i;
    size_t mark = vit_arena_mark(a);
    vit_tensor tn, y2;
    vit_result r;
    if ((r = vit__tensor4(a, &tn, 3, B, T, C, 1)) != VIT_OK ||
        (r = vit__tensor4(a, &y2, 2, B, c->num_classes ? c->num_classes : 1, 1, 1)) != VIT_OK)
        return r;
    if (c->pool == VIT_POOL_MAP) {
        int32_t skip = vit__pool_skip(c);
        if (!vit_arena_counting(a)) {
            vit_k_layernorm(tn.data, s->tok, m->norm_w.data, m->norm_b.data, B * T, C, c->ln_eps);
            for (bi = 0; bi < B; bi++) /* the rows the pool reads, packed: its input */
                memmove(tn.data + (size_t)bi * (T - skip) * C, tn.data + ((size_t)bi * T + skip) * C,
                        (size_t)(T - skip) * C * sizeof(float));
        }
        if ((r = vit__rev_pool_fwd(m, a, s, tn.data, s->feat, B, T - skip)) != VIT_OK) return r;
    } else if (!vit_arena_counting(a)) {
        const float *src = s->tok;
        if (c->norm_tokens) {
            vit_k_layernorm(tn.data, s->tok, m->norm_w.data, m->norm_b.data, B * T, C, c->ln_eps);
            src = tn.data;
        }
        for (bi = 0; bi < B; bi++) {
            float *pb = s->pooled + (size_t)bi * C;
            const float *tb = src + (size_t)bi * T * C;
            if (c->pool == VIT_POOL_CLS) {
                memcpy(pb, tb, (size_t)C * sizeof(float));
                if (c->dist_token) memcpy(s->dist + (size_t)bi * C, tb + C, (size_t)C * sizeof(float));
            } else {
                memset(pb, 0, (size_t)C * sizeof(float));
                for (l = first; l < T; l++) vit_k_add(pb, pb, tb + (size_t)l * C, C);
                for (i = 0; i < C; i++) pb[i] /= (float)(T - first);
            }
        }
        memcpy(s->feat, s->pooled, (size_t)B * C * sizeof(float));
        if (!c->norm_tokens) {
            vit_k_layernorm(s->feat, s->pooled, m->norm_w.data, m->norm_b.data, B, C, c->ln_eps);
            if (c->dist_token) vit_k_layernorm(tn.data, s->dist, m->norm_w.data, m->norm_b.data, B, C, c->ln_eps);
        } else if (c->dist_token) {
            memcpy(tn.data, s->dist, (size_t)B * C * sizeof(float));
        }
    }
    if (vit_arena_counting(a)) {
        vit_arena_rewind(a, mark);
        return VIT_OK;
    }

    /* DeiT: the two tokens' mean as features, the two heads' mean as logits (tn holds the normalised dist) */
    if (c->dist_token && features) {
        for (i = 0; i < B * C; i++) out[i] = (s->feat[i] + tn.data[i]) / 2.0f;
    } else if (c->dist_token && c->num_classes) {
        vit__rev_dense(out, s->feat, &m->head_w, &m->head_b, B, C, c->num_classes);
        vit__rev_dense(y2.data, tn.data, &m->head_dist_w, &m->head_dist_b, B, C, c->num_classes);
        for (i = 0; i < B * c->num_classes; i++) out[i] = (out[i] + y2.data[i]) / 2.0f;
    } else if (features) {
        memcpy(out, s->feat, (size_t)B * C * sizeof(float));
    } else {
        const float *f = s->feat;
        int32_t fw = C;
        if (c->representation_size) {
            vit__rev_dense(s->pre, s->feat, &m->pre_w, &m->pre_b, B, C, c->representation_size);
            vit_k_tanh(s->pre, s->pre, B * c->representation_size);
            f = s->pre;
            fw = c->representation_size;
        }
        if (c->num_classes) vit__rev_dense(out, f, &m->head_w, &m->head_b, B, fw, c->num_classes);
        else memcpy(out, f, (size_t)B * fw * sizeof(float));
    }
    vit_arena_rewind(a, mark);
    return VIT_OK;
}

/* Pool and head reversed: dtok (B, T, C) from seed (B, W). */
static vit_result vit__rev_head_back(const vit_model *m, vit_arena *a, const vit__rev_head *s, int features,
                                     const float *seed, float *dtok, int32_t B, int32_t T) {
    const vit_config *c = &m->cfg;
    int32_t C = c->dim, P = vit__prefix(c), first = c->pool == VIT_POOL_MEAN ? 0 : P, R = c->representation_size;
    int32_t bi, l, i, skip = vit__pool_skip(c);
    size_t mark = vit_arena_mark(a);
    vit_tensor df, dd, dr, dn, dpre, dhalf, dpatch;
    vit_result r;
    if ((r = vit__tensor4(a, &df, 2, B, C, 1, 1)) != VIT_OK || (r = vit__tensor4(a, &dd, 2, B, C, 1, 1)) != VIT_OK ||
        (r = vit__tensor4(a, &dr, 2, B, C, 1, 1)) != VIT_OK || (r = vit__tensor4(a, &dn, 3, B, T, C, 1)) != VIT_OK ||
        (r = vit__tensor4(a, &dpre, 2, B, R > 0 ? R : 1, 1, 1)) != VIT_OK ||
        (r = vit__tensor4(a, &dhalf, 2, B, c->num_classes ? c->num_classes : 1, 1, 1)) != VIT_OK ||
        (r = vit__tensor4(a, &dpatch, 3, B, c->pool == VIT_POOL_MAP ? T - skip : 1, C, 1)) != VIT_OK)
        return r;
    if (vit_arena_counting(a)) {
        if (c->pool == VIT_POOL_MAP && (r = vit__rev_pool_back(m, a, s, df.data, dpatch.data, B, T - skip)) != VIT_OK)
            return r;
        vit_arena_rewind(a, mark);
        return VIT_OK;
    }

    /* the head: df = d feat (dd = d of DeiT's normalised distillation token) */
    memset(dd.data, 0, (size_t)B * C * sizeof(float));
    if (c->dist_token && features) {
        for (i = 0; i < B * C; i++) df.data[i] = dd.data[i] = seed[i] / 2.0f;
    } else if (c->dist_token && c->num_classes) {
        for (i = 0; i < B * c->num_classes; i++) dhalf.data[i] = seed[i] / 2.0f;
        vit__rev_linear(df.data, dhalf.data, &m->head_w, B, c->num_classes, C);
        vit__rev_linear(dd.data, dhalf.data, &m->head_dist_w, B, c->num_classes, C);
    } else if (features) {
        memcpy(df.data, seed, (size_t)B * C * sizeof(float));
    } else {
        float *dfw = R ? dpre.data : df.data;
        int32_t fw = R ? R : C;
        if (c->num_classes) vit__rev_linear(dfw, seed, &m->head_w, B, c->num_classes, fw);
        else memcpy(dfw, seed, (size_t)B * fw * sizeof(float));
        if (R) { /* tanh reversed, then pre_logits' weight */
            for (i = 0; i < B * R; i++) dpre.data[i] *= 1.0f - s->pre[i] * s->pre[i];
            vit__rev_linear(df.data, dpre.data, &m->pre_w, B, R, C);
        }
    }

    /* the pool: back onto the tokens (normalised ones where the norm came first) */
    memset(dn.data, 0, (size_t)B * T * C * sizeof(float));
    if (c->pool == VIT_POOL_MAP) {
        if ((r = vit__rev_pool_back(m, a, s, df.data, dpatch.data, B, T - skip)) != VIT_OK) return r;
        for (bi = 0; bi < B; bi++)
            memcpy(dn.data + ((size_t)bi * T + skip) * C, dpatch.data + (size_t)bi * (T - skip) * C,
                   (size_t)(T - skip) * C * sizeof(float));
    } else {
        if (!c->norm_tokens) { /* the final LayerNorm on the pooled vectors */
            memset(dr.data, 0, (size_t)B * C * sizeof(float));
            vit_k_layernorm_back(dr.data, s->pooled, m->norm_w.data, df.data, B, C, c->ln_eps);
            memcpy(df.data, dr.data, (size_t)B * C * sizeof(float));
            if (c->dist_token) {
                memset(dr.data, 0, (size_t)B * C * sizeof(float));
                vit_k_layernorm_back(dr.data, s->dist, m->norm_w.data, dd.data, B, C, c->ln_eps);
                memcpy(dd.data, dr.data, (size_t)B * C * sizeof(float));
            }
        }
        for (bi = 0; bi < B; bi++) {
            float *db = dn.data + (size_t)bi * T * C;
            const float *g = df.data + (size_t)bi * C;
            if (c->pool == VIT_POOL_CLS) {
                memcpy(db, g, (size_t)C * sizeof(float));
                if (c->dist_token) memcpy(db + C, dd.data + (size_t)bi * C, (size_t)C * sizeof(float));
            } else {
                for (l = first; l < T; l++)
                    for (i = 0; i < C; i++) db[(size_t)l * C + i] = g[i] / (float)(T - first);
            }
        }
    }
    if (c->pool == VIT_POOL_MAP || c->norm_tokens) {
        memset(dtok, 0, (size_t)B * T * C * sizeof(float));
        vit_k_layernorm_back(dtok, s->tok, m->norm_w.data, dn.data, B * T, C, c->ln_eps);
    } else {
        memcpy(dtok, dn.data, (size_t)B * T * C * sizeof(float));
    }
    vit_arena_rewind(a, mark);
    return VIT_OK;
}

/* The forward's output width for the reverse's options. */
static int32_t vit__rev_width(const vit_config *c, int features) {
    if (features) return c->dim;
    return c->num_classes ? c->num_classes : c->representation_size ? c->representation_size : c->dim;
}

/* dln1: NULL, or (B*T*C) floats for the last block's first LayerNorm's
   gradient (Grad-CAM). legrad: instead of one reverse pass from the
   output, grad_attn[l] gets the gradient of the score that block l's
   output would give through the final norm and head, with respect to its
   own probabilities (LeGrad); grad_tokens and grad_input are not made. */
static vit_result vit__reverse(const vit_model *m, vit_arena *a, const vit_tensor *x, vit_reverse *rv, float *dln1,
                               int legrad) {
    const vit_config *c = &m->cfg;
    int32_t B = x->shape[0], C = c->dim, G = c->image_size / c->patch_size, P = vit__prefix(c), T = G * G + P;
    int32_t L = c->depth, NH = c->heads, H1 = c->glu ? 2 * c->mlp_dim : c->mlp_dim, l, bi;
    int features = rv->features || (c->num_classes == 0 && c->representation_size == 0);
    int32_t W = vit__rev_width(c, features);
    int counting;
    vit_tensor out, gin, tmp, dcur, dnext, emb, one;
    vit_tensor *tok = NULL, *att = NULL;
    vit__rev_head hs;
    vit__rev_block *bs;
    vit_result r;
    size_t mark;
    vit_tensor *tokv, *attv;
    char s[64];
    if (x->ndim != 4 || x->shape[1] != c->in_channels || x->shape[2] != c->image_size || x->shape[3] != c->image_size)
        return vit__fail(VIT_ERR_SHAPE, "vit_model_reverse: input has shape %s, the model expects (B, %d, %d, %d)",
                         vit_tensor_shape_str(x, s, sizeof s), (int)c->in_channels, (int)c->image_size,
                         (int)c->image_size);
    if (!rv->seed || rv->seed->ndim != 2 || rv->seed->shape[0] != B || rv->seed->shape[1] != W)
        return vit__fail(VIT_ERR_SHAPE, "vit_model_reverse: seed has shape %s, expected (%d, %d): one weight per %s",
                         rv->seed ? vit_tensor_shape_str(rv->seed, s, sizeof s) : "NULL", (int)B, (int)W,
                         features ? "feature" : c->num_classes ? "class" : "output");
    if ((r = vit__fits((double)B * T * (H1 > 3 * C ? H1 : 3 * C), B, "vit_model_reverse")) != VIT_OK ||
        (r = vit__fits((double)B * NH * T * T, B, "vit_model_reverse (attention)")) != VIT_OK)
        return r;

    /* the caller's tensors first, so that rewinding frees only what the reverse keeps for itself (while
       counting, the caller's tables are not touched: they may be fake memory too) */
    counting = vit_arena_counting(a);
    if ((r = vit__tensor4(a, &out, 2, B, W, 1, 1)) != VIT_OK) return r;
    for (l = 0; rv->attn && l < L; l++)
        if ((r = vit__tensor4(a, counting ? &one : &rv->attn[l], 4, B, NH, T, T)) != VIT_OK) return r;
    for (l = 0; rv->grad_attn && l < L; l++)
        if ((r = vit__tensor4(a, counting ? &one : &rv->grad_attn[l], 4, B, NH, T, T)) != VIT_OK) return r;
    for (l = 0; rv->tokens && l <= L; l++)
        if ((r = vit__tensor4(a, counting ? &one : &rv->tokens[l], 3, B, T, C, 1)) != VIT_OK) return r;
    for (l = 0; rv->grad_tokens && l <= L; l++)
        if ((r = vit__tensor4(a, counting ? &one : &rv->grad_tokens[l], 3, B, T, C, 1)) != VIT_OK) return r;
    if (rv->grad_input &&
        (r = vit__tensor4(a, &gin, 4, B, c->in_channels, c->image_size, c->image_size)) != VIT_OK)
        return r;
    mark = vit_arena_mark(a);

    /* what the reverse reads: tokens and probabilities (the caller's when asked for), each block's tensors */
    tokv = rv->tokens;
    attv = rv->attn;
    if (!tokv || !attv) {
        vit_tensor *tab;
        if (!(tab = (vit_tensor *)vit_arena_alloc(a, (size_t)(2 * L + 1) * sizeof(vit_tensor)))) return VIT_ERR_OOM;
        tok = tab;
        att = tab + L + 1;
        if (vit_arena_counting(a)) { /* the table is fake memory while counting: size with one entry */
            vit_tensor t1;
            for (l = 0; !tokv && l <= L; l++)
                if ((r = vit__tensor4(a, &t1, 3, B, T, C, 1)) != VIT_OK) return r;
            for (l = 0; !attv && l < L; l++)
                if ((r = vit__tensor4(a, &t1, 4, B, NH, T, T)) != VIT_OK) return r;
        } else {
            for (l = 0; !tokv && l <= L; l++)
                if ((r = vit__tensor4(a, &tok[l], 3, B, T, C, 1)) != VIT_OK) return r;
            for (l = 0; !attv && l < L; l++)
                if ((r = vit__tensor4(a, &att[l], 4, B, NH, T, T)) != VIT_OK) return r;
        }
        if (!tokv) tokv = tok;
        if (!attv) attv = att;
    }
    if (!(bs = (vit__rev_block *)vit_arena_alloc(a, (size_t)L * sizeof(vit__rev_block)))) return VIT_ERR_OOM;
    for (l = 0; l < L; l++) {
        vit_tensor q, ao, mid, u;
        if ((r = vit__tensor4(a, &q, 2, B * T, 3 * C, 1, 1)) != VIT_OK ||
            (r = vit__tensor4(a, &ao, 2, B * T, C, 1, 1)) != VIT_OK ||
            (r = vit__tensor4(a, &mid, 2, B * T, C, 1, 1)) != VIT_OK ||
            (r = vit__tensor4(a, &u, 2, B * T, H1, 1, 1)) != VIT_OK)
            return r;
        if (!vit_arena_counting(a)) {
            bs[l].x = tokv[l].data; bs[l].qkv = q.data; bs[l].att = attv[l].data;
            bs[l].ao = ao.data; bs[l].mid = mid.data; bs[l].u = u.data;
        }
    }
    {
        vit_tensor t[10];
        int32_t Np = T - vit__pool_skip(c), map = c->pool == VIT_POOL_MAP;
        if ((r = vit__tensor4(a, &t[0], 2, B, C, 1, 1)) != VIT_OK ||
            (r = vit__tensor4(a, &t[1], 2, B, C, 1, 1)) != VIT_OK ||
            (r = vit__tensor4(a, &t[2], 2, B, c->representation_size ? c->representation_size : 1, 1, 1)) != VIT_OK ||
            (r = vit__tensor4(a, &t[3], 2, B, C, 1, 1)) != VIT_OK ||
            (r = vit__tensor4(a, &t[4], 2, map ? B * Np : 1, 2 * C, 1, 1)) != VIT_OK ||
            (r = vit__tensor4(a, &t[5], 3, B, vit__pool_heads(c), map ? Np : 1, 1)) != VIT_OK ||
            (r = vit__tensor4(a, &t[6], 2, B, C, 1, 1)) != VIT_OK ||
            (r = vit__tensor4(a, &t[7], 2, B, C, 1, 1)) != VIT_OK ||
            (r = vit__tensor4(a, &t[8], 2, B, map ? m->pool_w.mlp.fc1_w.shape[0] : 1, 1, 1)) != VIT_OK ||
            (r = vit__tensor4(a, &t[9], 2, B, C, 1, 1)) != VIT_OK ||
            (r = vit__tensor4(a, &emb, 3, B, T, C, 1)) != VIT_OK)
            return r;
        hs.pooled = t[0].data; hs.dist = t[1].data; hs.pre = t[2].data; hs.feat = t[3].data;
        hs.kv = t[4].data; hs.probs = t[5].data; hs.o = t[6].data; hs.z = t[7].data; hs.u = t[8].data;
        hs.q = t[9].data;
        hs.tok = vit_arena_counting(a) ? NULL : tokv[L].data;
    }
    if ((r = vit__tensor4(a, &dcur, 3, B, T, C, 1)) != VIT_OK || (r = vit__tensor4(a, &dnext, 3, B, T, C, 1)) != VIT_OK)
        return r;

    /* forward: patch embedding (CLIP's LayerNorm after it), the blocks, pool and head, keeping what is read back */
    {
        size_t m2 = vit_arena_mark(a);
        if ((r = vit_patch_forward(a, &m->patch, &m->patch_w, x, &tmp, NULL)) != VIT_OK) return r;
        if (!vit_arena_counting(a)) {
            memcpy(emb.data, tmp.data, (size_t)B * T * C * sizeof(float));
            if (c->pre_norm)
                vit_k_layernorm(tokv[0].data, emb.data, m->pre_norm_w.data, m->pre_norm_b.data, B * T, C, c->ln_eps);
            else
                memcpy(tokv[0].data, emb.data, (size_t)B * T * C * sizeof(float));
        }
        vit_arena_rewind(a, m2);
    }
    for (l = 0; l < L; l++)
        if ((r = vit__rev_block_fwd(m, a, &m->blocks[l], &bs[l], vit_arena_counting(a) ? NULL : tokv[l + 1].data, B,
                                    T)) != VIT_OK)
            return r;
    if ((r = vit__rev_head_fwd(m, a, &hs, features, out.data, B, T)) != VIT_OK) return r;

    /* LeGrad: each block's output through the head, back to that block's probabilities */
    if (legrad) {
        vit_tensor y1;
        if ((r = vit__tensor4(a, &y1, 2, B, W, 1, 1)) != VIT_OK) return r;
        for (l = 0; l < L; l++) {
            hs.tok = vit_arena_counting(a) ? NULL : tokv[l + 1].data;
            if ((r = vit__rev_head_fwd(m, a, &hs, features, y1.data, B, T)) != VIT_OK ||
                (r = vit__rev_head_back(m, a, &hs, features, rv->seed->data, dcur.data, B, T)) != VIT_OK ||
                (r = vit__rev_block_back(m, a, &m->blocks[l], &bs[l], dcur.data, NULL,
                                         rv->grad_attn && !counting ? rv->grad_attn[l].data : NULL, NULL, B, T)) !=
                    VIT_OK)
                return r;
        }
        vit_arena_rewind(a, mark);
        rv->out = out;
        return VIT_OK;
    }

    /* reverse: the head, then each block, then CLIP's LayerNorm and the patch convolution */
    if ((r = vit__rev_head_back(m, a, &hs, features, rv->seed->data, dcur.data, B, T)) != VIT_OK) return r;
    for (l = L - 1; l >= 0; l--) {
        if (rv->grad_tokens && !vit_arena_counting(a))
            memcpy(rv->grad_tokens[l + 1].data, dcur.data, (size_t)B * T * C * sizeof(float));
        if ((r = vit__rev_block_back(m, a, &m->blocks[l], &bs[l], dcur.data, dnext.data,
                                     rv->grad_attn && !counting ? rv->grad_attn[l].data : NULL,
                                     l == L - 1 ? dln1 : NULL, B, T)) != VIT_OK)
            return r;
        tmp = dcur; dcur = dnext; dnext = tmp;
    }
    if (!vit_arena_counting(a)) {
        if (rv->grad_tokens) memcpy(rv->grad_tokens[0].data, dcur.data, (size_t)B * T * C * sizeof(float));
        if (c->pre_norm) {
            memset(dnext.data, 0, (size_t)B * T * C * sizeof(float));
            vit_k_layernorm_back(dnext.data, emb.data, m->pre_norm_w.data, dcur.data, B * T, C, c->ln_eps);
            tmp = dcur; dcur = dnext; dnext = tmp;
        }
    }
    if (rv->grad_input) {
        vit_patch_shape sh;
        vit_tensor cols;
        sh.B = 1; sh.C = c->in_channels; sh.H = sh.W = c->image_size; sh.P = c->patch_size; sh.D = C;
        if ((r = vit__tensor4(a, &cols, 2, G * G, c->in_channels * c->patch_size * c->patch_size, 1, 1)) != VIT_OK)
            return r;
        /* the patch rows of each image; prefix tokens have no pixels */
        for (bi = 0; bi < B && !vit_arena_counting(a); bi++)
            vit_k_patch_conv_back(gin.data + (size_t)bi * c->in_channels * c->image_size * c->image_size, cols.data,
                                  dcur.data + ((size_t)bi * T + P) * C, m->patch_w.conv_w.data, &sh);
        if (!counting) rv->grad_input[0] = gin;
    }
    vit_arena_rewind(a, mark);
    rv->out = out;
    return VIT_OK;
}

/* What vit_model_reverse and its sizing check first. */
static vit_result vit__reverse_check(const vit_model *m, const vit_tensor *x, const vit_reverse *rv, const char *who) {
    vit_result r;
    if (!m || !x || !rv) return vit__fail(VIT_ERR_ARG, "%s: NULL argument", who);
    if ((r = vit__check_call(m, x, who)) != VIT_OK) return r;
    if (m->kind != VIT_KIND_VIT)
        return vit__fail(VIT_ERR_UNSUPPORTED, "%s: the reverse pass runs a ViT, not a %s", who, vit_kind_name(m->kind));
    if (m->n_kept[VIT_DTYPE_BF16] || m->n_kept[VIT_DTYPE_I8])
        return vit__fail(VIT_ERR_UNSUPPORTED,
                         "%s: the file keeps dense layers in %s; the reverse pass needs F32 weights (its gradient "
                         "would not be the one of the quantised forward; hint: use the F32 file)",
                         who, m->n_kept[VIT_DTYPE_I8] ? "I8" : "BF16");
    return VIT_OK;
}

VITDEF vit_result vit_model_reverse(const vit_model *m, vit_arena *act, const vit_tensor *x, vit_reverse *rv) {
    size_t i, n, mark;
    vit_result r;
    vit_reverse keep;
    if (!m || !act || !x || !x->data || !rv) return vit__fail(VIT_ERR_ARG, "vit_model_reverse: NULL argument");
    if (vit_arena_counting(act))
        return vit__fail(VIT_ERR_ARG, "vit_model_reverse: act is a counting arena; size one with "
                                      "vit_model_reverse_memory, then allocate it");
    if ((r = vit__reverse_check(m, x, rv, "vit_model_reverse")) != VIT_OK) return r;
    n = vit_tensor_numel(x);
    if (!vit__all_finite(x->data, n))
        for (i = 0; i < n; i++)
            if (!isfinite(x->data[i]))
                return vit__fail(VIT_ERR_NONFINITE, "vit_model_reverse: input element %zu is %s", i,
                                 isnan(x->data[i]) ? "NaN" : "infinite");
    if (rv->seed && rv->seed->data && !vit__all_finite(rv->seed->data, vit_tensor_numel(rv->seed)))
        return vit__fail(VIT_ERR_NONFINITE, "vit_model_reverse: the seed holds a NaN or Inf");
    if (rv->seed && !rv->seed->data) return vit__fail(VIT_ERR_ARG, "vit_model_reverse: seed has no data");
    /* On failure the arena is rewound and the caller's tensors are as they were. */
    keep = *rv;
    mark = vit_arena_mark(act);
    if ((r = vit__reverse(m, act, x, rv, NULL, 0)) != VIT_OK) {
        vit_arena_rewind(act, mark);
        *rv = keep;
    }
    return r;
}

VITDEF vit_result vit_model_reverse_memory(const vit_model *m, const vit_tensor *x, const vit_reverse *rv,
                                           size_t *act_bytes) {
    vit_arena counter;
    vit_tensor probe, seed, tab[1025], gin; /* depth <= 1024, checked at load; one table for all: nothing is read */
    vit_reverse o;
    vit_result r;
    if (!act_bytes) return vit__fail(VIT_ERR_ARG, "vit_model_reverse_memory: NULL argument");
    if ((r = vit__reverse_check(m, x, rv, "vit_model_reverse_memory")) != VIT_OK) return r;
    vit_arena_init(&counter, NULL, 0);
    probe = *x;
    probe.data = (float *)(uintptr_t)VIT_ALIGN; /* never read while counting */
    o = *rv;
    if (rv->seed) {
        seed = *rv->seed;
        o.seed = &seed;
    }
    if (o.attn) o.attn = tab;
    if (o.grad_attn) o.grad_attn = tab;
    if (o.tokens) o.tokens = tab;
    if (o.grad_tokens) o.grad_tokens = tab;
    if (o.grad_input) o.grad_input = &gin;
    if ((r = vit__reverse(m, &counter, &probe, &o, NULL, 0)) != VIT_OK) return r;
    *act_bytes = counter.peak + VIT_ALIGN;
    return VIT_OK;
}

/* ---- maps: attention maps and rollout ---- */

static float vit__fuse(const float *p, size_t stride, int32_t n, vit_fusion f) {
    float v = p[0];
    int32_t h;
    for (h = 1; h < n; h++) {
        float u = p[(size_t)h * stride];
        if (f == VIT_FUSE_MAX) v = u > v ? u : v;
        else if (f == VIT_FUSE_MIN) v = u < v ? u : v;
        else v += u;
    }
    return f == VIT_FUSE_MEAN ? v / (float)n : v;
}

static vit_result vit__check_att(const vit_tensor *att, int32_t b, const char *who) {
    char s[64];
    if (!att || !att->data) return vit__fail(VIT_ERR_ARG, "%s: no attention tensor (forward with opts.attn set)", who);
    if (att->ndim != 4 || att->shape[2] != att->shape[3] || att->shape[2] < 2)
        return vit__fail(VIT_ERR_SHAPE, "%s: attention has shape %s, expected (B, NH, T, T)", who,
                         vit_tensor_shape_str(att, s, sizeof s));
    if (b < 0 || b >= att->shape[0])
        return vit__fail(VIT_ERR_ARG, "%s: batch item %d outside 0..%d", who, (int)b, (int)att->shape[0] - 1);
    return VIT_OK;
}

VITDEF vit_result vit_map_cls(const vit_tensor *att, int32_t b, int32_t head, vit_fusion f, float *out) {
    int32_t NH, T, j;
    size_t hs;
    const float *row;
    vit_result r;
    if ((r = vit__check_att(att, b, "vit_map_cls")) != VIT_OK) return r;
    NH = att->shape[1]; T = att->shape[2];
    if (!out || head >= NH) return vit__fail(VIT_ERR_ARG, "vit_map_cls: head %d outside 0..%d", (int)head, (int)NH - 1);
    hs = (size_t)T * T;
    row = att->data + (size_t)b * NH * hs; /* head 0, query row 0 (the class token) */
    for (j = 1; j < T; j++)
        out[j - 1] = head >= 0 ? row[(size_t)head * hs + j] : vit__fuse(row + j, hs, NH, f);
    return VIT_OK;
}

/* How many of n fused weights rollout drops: vit-explain's
   int(flat.size(-1) * discard_ratio), a product in double truncated, with
   the ratio a Python float. A float ratio stands for the decimal it is
   written as: the shortest "%.*g" text (1 to 9 digits) that reads back, as
   a double rounded to float, as the same float; read as a double, that is
   the Python float of the same text. So 0.78f is 0.78, and 0.78 of 2500
   (a 7x7 grid and its class token, squared) drops 1950 as vit-explain
   does, where 2500 * 0.78f in float or double gives 1949.9999 -> 1949. */
static int32_t vit__discard_count(size_t n, float ratio) {
    char s[32];
    int digits = 1;
    snprintf(s, sizeof s, "%.*g", digits, (double)ratio);
    while (digits < 9 && (float)strtod(s, NULL) != ratio) snprintf(s, sizeof s, "%.*g", ++digits, (double)ratio);
    return (int32_t)((double)n * strtod(s, NULL));
}

typedef struct vit__ranked { float v; int32_t i; } vit__ranked;
static int vit__ranked_cmp(const void *a, const void *b) {
    const vit__ranked *x = (const vit__ranked *)a, *y = (const vit__ranked *)b;
    if (x->v != y->v) return x->v < y->v ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

VITDEF vit_result vit_map_rollout(vit_arena *a, const vit_tensor *att, int32_t depth, int32_t b,
                                  const vit_rollout_params *p, float *out) {
    int32_t NH, T, l, i, j, k, drop = 0;
    size_t mark, hs;
    float *A, *R, *Rn, *sums, mx, *swap;
    vit__ranked *rank = NULL;
    vit_result r;

    /* the arguments, and every layer's maps the same shape */
    if (!a || !p || !out || depth < 1) return vit__fail(VIT_ERR_ARG, "vit_map_rollout: NULL argument or depth < 1");
    if (vit_arena_counting(a)) return vit__fail(VIT_ERR_ARG, "vit_map_rollout: needs a real arena");
    if (!(p->discard_ratio >= 0.0f && p->discard_ratio < 1.0f))
        return vit__fail(VIT_ERR_ARG, "vit_map_rollout: discard_ratio %g outside [0, 1)", (double)p->discard_ratio);
    for (l = 0; l < depth; l++) {
        if ((r = vit__check_att(&att[l], b, "vit_map_rollout")) != VIT_OK) return r;
        if (memcmp(att[l].shape, att[0].shape, sizeof att[0].shape))
            return vit__fail(VIT_ERR_SHAPE, "vit_map_rollout: layer %d's attention differs in shape from layer 0's",
                             (int)l);
    }

    /* scratch: A and R, the next R, row sums, and the ranking when discarding */
    NH = att[0].shape[1]; T = att[0].shape[2];
    hs = (size_t)T * T;
    mark = vit_arena_mark(a);
    A = (float *)vit_arena_alloc(a, hs * sizeof(float));
    R = (float *)vit_arena_alloc(a, hs * sizeof(float));
    Rn = (float *)vit_arena_alloc(a, hs * sizeof(float));
    sums = (float *)vit_arena_alloc(a, (size_t)T * sizeof(float));
    if (p->discard_ratio > 0.0f) {
        rank = (vit__ranked *)vit_arena_alloc(a, hs * sizeof(vit__ranked));
        drop = vit__discard_count(hs, p->discard_ratio);
    }
    if (!A || !R || !Rn || !sums || (p->discard_ratio > 0.0f && !rank)) {
        vit_arena_rewind(a, mark);
        return VIT_ERR_OOM;
    }

    /* R holds the running product transposed, so that R^T <- R^T A^T is
       one vit_k_matmul (y = x w^T) with x = R^T, w = A. */
    for (i = 0; i < (int32_t)hs; i++) R[i] = 0.0f;
    for (i = 0; i < T; i++) R[(size_t)i * T + i] = 1.0f;
    for (l = 0; l < depth; l++) {
        const float *base = att[l].data + (size_t)b * NH * hs;
        for (i = 0; i < (int32_t)hs; i++) A[i] = vit__fuse(base + i, hs, NH, p->fusion);
        if (rank) {
            /* Zero the lowest fused weights, ties broken by position, but
               never entry 0 (the class token attending to itself). */
            for (i = 0; i < (int32_t)hs; i++) { rank[i].v = A[i]; rank[i].i = i; }
            qsort(rank, hs, sizeof *rank, vit__ranked_cmp);
            for (k = 0; k < drop; k++)
                if (rank[k].i != 0) A[rank[k].i] = 0.0f;
        }

        /* A + I, halved, rows renormalised; then R^T <- R^T A^T */
        for (i = 0; i < T; i++) {
            float s = 0.0f;
            for (j = 0; j < T; j++) {
                float v = (A[(size_t)i * T + j] + (i == j ? 1.0f : 0.0f)) * 0.5f;
                A[(size_t)i * T + j] = v;
                s += v;
            }
            sums[i] = s;
        }
        /* Rows renormalised; vit-explain's a / a.sum(dim=-1) instead divides
           column j by row j's sum (broadcasting), kept behind a flag. */
        for (i = 0; i < T; i++)
            for (j = 0; j < T; j++) A[(size_t)i * T + j] /= p->explain_compat ? sums[j] : sums[i];
        vit_k_matmul(Rn, R, A, NULL, T, T, T);
        swap = R; R = Rn; Rn = swap;
    }

    /* Row 0 of the product (column 0 of R^T), over the patches. */
    mx = 0.0f;
    for (j = 1; j < T; j++) {
        out[j - 1] = R[(size_t)j * T];
        if (out[j - 1] > mx) mx = out[j - 1];
    }
    if (mx > 0.0f)
        for (j = 0; j < T - 1; j++) out[j] /= mx;
    vit_arena_rewind(a, mark);
    return VIT_OK;
}

/* ---- maps: explanations ---- */
/* Class-specific maps from a reverse pass (vit_model_reverse), each as its
   authors' code computes it. The token maps read the query rows of the
   final (T, T) matrix over the patch columns [prefix, T): the class
   token's row where the model has one, else the mean of every row (a GAP
   or attention-pooled model has no token that stands for the image). */

/* Rollout-type maps through `depth` layers for batch item b: A_l from the
   probabilities att[l] and (grad rollout, Chefer) the gradients grad[g(l)]
   with g(l) = l, or depth-1-l for vit-explain's pairing; then
     GRAD:   A = max(mean_h(att D), 0), where D = att (grad - sum_j att
             grad) is the gradient of the scores before the softmax: what
             vit-explain's backward hook on attn_drop receives (in eval the
             dropout returns its input, so the hook lands on the softmax's
             node); the lowest discard_ratio of A's
             T*T values (class token's included, as vit-explain) set to 0,
             A = (A + I) / 2 divided column j by row j's sum (vit-explain's
             a / a.sum(-1) broadcasts so), R = A R; the map over its max;
     ROLL:   the same from mean_h(att), never dropping entry 0 (its
             rollout leaves the class token alone);
     CHEFER: R = R + mean_h(max(grad att, 0)) R, the map raw. */
enum { VIT__ROLL_PLAIN = 0, VIT__ROLL_GRAD, VIT__ROLL_CHEFER };

static vit_result vit__roll(vit_arena *a, const vit_tensor *att, const vit_tensor *grad, int32_t depth, int32_t b,
                            int32_t prefix, int32_t query, int mode, float discard, int paper_pairing, float *out,
                            const char *who) {
    int32_t NH, T, l, i, j, k, h, drop = 0, G2;
    size_t mark, hs;
    float *A, *R, *Rn, *sums, *swap, mx;
    vit__ranked *rank = NULL;
    vit_result r;
    if (!a || !att || !out || depth < 1) return vit__fail(VIT_ERR_ARG, "%s: NULL argument or depth < 1", who);
    if (vit_arena_counting(a)) return vit__fail(VIT_ERR_ARG, "%s: needs a real arena", who);
    if (mode != VIT__ROLL_PLAIN && !grad)
        return vit__fail(VIT_ERR_ARG, "%s: no gradients (vit_reverse.grad_attn)", who);
    if (!(discard >= 0.0f && discard < 1.0f))
        return vit__fail(VIT_ERR_ARG, "%s: discard_ratio %g outside [0, 1)", who, (double)discard);
    for (l = 0; l < depth; l++) {
        if ((r = vit__check_att(&att[l], b, who)) != VIT_OK ||
            (grad && mode != VIT__ROLL_PLAIN && (r = vit__check_att(&grad[l], b, who)) != VIT_OK))
            return r;
        if (memcmp(att[l].shape, att[0].shape, sizeof att[0].shape) ||
            (grad && mode != VIT__ROLL_PLAIN && memcmp(grad[l].shape, att[0].shape, sizeof att[0].shape)))
            return vit__fail(VIT_ERR_SHAPE, "%s: layer %d's attention or gradient differs in shape from layer 0's", who,
                             (int)l);
    }
    NH = att[0].shape[1]; T = att[0].shape[2];
    if (prefix < 0 || prefix >= T)
        return vit__fail(VIT_ERR_ARG, "%s: prefix %d outside 0..%d", who, (int)prefix, (int)T - 1);
    G2 = T - prefix;
    hs = (size_t)T * T;
    mark = vit_arena_mark(a);
    A = (float *)vit_arena_alloc(a, hs * sizeof(float));
    R = (float *)vit_arena_alloc(a, hs * sizeof(float));
    Rn = (float *)vit_arena_alloc(a, hs * sizeof(float));
    sums = (float *)vit_arena_alloc(a, (size_t)T * sizeof(float));
    if (mode != VIT__ROLL_CHEFER && discard > 0.0f) {
        rank = (vit__ranked *)vit_arena_alloc(a, hs * sizeof(vit__ranked));
        drop = vit__discard_count(hs, discard);
    }
    if (!A || !R || !Rn || !sums || (mode != VIT__ROLL_CHEFER && discard > 0.0f && !rank)) {
        vit_arena_rewind(a, mark);
        return VIT_ERR_OOM;
    }

    /* R = I; R holds the running product as it is (row i: query i) */
    for (i = 0; i < (int32_t)hs; i++) R[i] = 0.0f;
    for (i = 0; i < T; i++) R[(size_t)i * T + i] = 1.0f;
    for (l = 0; l < depth; l++) {
        int32_t g = paper_pairing ? depth - 1 - l : l;
        const float *P = att[l].data + (size_t)b * NH * hs, *Pg = att[g].data + (size_t)b * NH * hs;
        const float *D = mode == VIT__ROLL_PLAIN ? NULL : grad[g].data + (size_t)b * NH * hs;

        /* the layer's fused matrix (GRAD: the scores' gradient per head first, a row at a time into Rn) */
        for (i = 0; i < (int32_t)hs; i++) A[i] = 0.0f;
        for (h = 0; h < NH; h++)
            for (i = 0; i < T; i++) {
                const float *pr = P + (size_t)h * hs + (size_t)i * T;
                const float *dr = D ? D + (size_t)h * hs + (size_t)i * T : NULL;
                float *ar = A + (size_t)i * T;
                if (mode == VIT__ROLL_GRAD) { /* the scores' gradient of the gradient's own layer */
                    vit_k_softmax_back(Rn, Pg + (size_t)h * hs + (size_t)i * T, dr, 1, T);
                    dr = Rn;
                }
                for (j = 0; j < T; j++) {
                    float v = mode == VIT__ROLL_PLAIN ? pr[j] : pr[j] * dr[j];
                    ar[j] += mode == VIT__ROLL_CHEFER && v < 0.0f ? 0.0f : v;
                }
            }
        for (i = 0; i < (int32_t)hs; i++) {
            float s = A[i] / (float)NH;
            A[i] = mode == VIT__ROLL_GRAD && s < 0.0f ? 0.0f : s;
        }

        /* Chefer: R += A R */
        if (mode == VIT__ROLL_CHEFER) {
            vit__mm p = vit__mm_nn(Rn, A, R, T, T, T);
            vit__matmul(&p);
            for (i = 0; i < (int32_t)hs; i++) R[i] += Rn[i];
            continue;
        }

        /* rollout: the lowest weights dropped, (A + I) / 2, divided by sums, R = A R */
        if (rank) {
            for (i = 0; i < (int32_t)hs; i++) { rank[i].v = A[i]; rank[i].i = i; }
            qsort(rank, hs, sizeof *rank, vit__ranked_cmp);
            for (k = 0; k < drop; k++)
                if (mode == VIT__ROLL_GRAD || rank[k].i != 0) A[rank[k].i] = 0.0f;
        }
        for (i = 0; i < T; i++) {
            float s = 0.0f;
            for (j = 0; j < T; j++) {
                float v = (A[(size_t)i * T + j] + (i == j ? 1.0f : 0.0f)) * 0.5f;
                A[(size_t)i * T + j] = v;
                s += v;
            }
            sums[i] = s;
        }
        for (i = 0; i < T; i++)
            for (j = 0; j < T; j++) A[(size_t)i * T + j] /= sums[j];
        {
            vit__mm p = vit__mm_nn(Rn, A, R, T, T, T);
            vit__matmul(&p);
        }
        swap = R; R = Rn; Rn = swap;
    }

    /* the query rows over the patch columns: the class token's (query), else (query < 0) their mean */
    for (j = 0; j < G2; j++) {
        float s = 0.0f;
        if (query >= 0) s = R[(size_t)query * T + prefix + j];
        else {
            for (i = 0; i < T; i++) s += R[(size_t)i * T + prefix + j];
            s /= (float)T;
        }
        out[j] = s;
    }
    if (mode != VIT__ROLL_CHEFER) {
        mx = out[0];
        for (j = 1; j < G2; j++) mx = out[j] > mx ? out[j] : mx;
        if (mx != 0.0f)
            for (j = 0; j < G2; j++) out[j] /= mx;
    }
    vit_arena_rewind(a, mark);
    return VIT_OK;
}

VITDEF const char *vit_method_name(vit_method method) {
    static const char *const names[VIT_METHOD_COUNT] = {"rollout", "grad-rollout", "chefer", "legrad",
                                                        "gradcam", "saliency",     "gxi",    "ig"};
    return (int)method >= 0 && (int)method < VIT_METHOD_COUNT ? names[method] : "unknown";
}

VITDEF int32_t vit_explain_size(const vit_model *m, vit_method method) {
    int32_t G;
    if (!m || m->kind != VIT_KIND_VIT || (int)method < 0 || (int)method >= VIT_METHOD_COUNT) return 0;
    G = m->cfg.image_size / m->cfg.patch_size;
    return method >= VIT_METHOD_SALIENCY ? m->cfg.image_size * m->cfg.image_size : G * G;
}

VITDEF int32_t vit_model_output_width(const vit_model *m, int32_t features) {
    if (!m || m->kind != VIT_KIND_VIT) return 0;
    return vit__rev_width(&m->cfg, features || (m->cfg.num_classes == 0 && m->cfg.representation_size == 0));
}

#define VIT__IG_CHUNK 4 /* integrated gradients: steps per reverse pass */

/* The explanation, its arena use counted when a is counting (out then unread). */
static vit_result vit__explain(const vit_model *m, vit_arena *a, const vit_tensor *x, vit_method method,
                               const float *seedv, const vit_explain_params *p, float *out) {
    const vit_config *c = &m->cfg;
    int32_t L = c->depth, C = c->dim, G = c->image_size / c->patch_size, P = vit__prefix(c), T = G * G + P;
    int32_t S = c->image_size, Cin = c->in_channels, W = vit_model_output_width(m, p->features), l, i, j, h, k;
    int32_t query = c->class_token ? 0 : -1, steps = p->ig_steps > 0 ? p->ig_steps : 16;
    int counting = vit_arena_counting(a);
    size_t mark = vit_arena_mark(a), hs = (size_t)T * T;
    vit_tensor *tab, seed, xb, ln;
    vit_reverse rv;
    vit_result r;
    float *dln1 = NULL, *gsum = NULL;
    /* integrated gradients' steps run VIT__IG_CHUNK at a time: one batch of
       16 ViT-B/16 reverse passes keeps 1.7 GB, a batch of 4 a quarter */
    int32_t B = method == VIT_METHOD_IG ? (steps < VIT__IG_CHUNK ? steps : VIT__IG_CHUNK) : 1, sshape[2], s0;
    size_t npix = (size_t)Cin * S * S;

    /* the reverse pass this method reads */
    if (!(tab = (vit_tensor *)vit_arena_alloc(a, (size_t)(3 * L + 3) * sizeof(vit_tensor)))) return VIT_ERR_OOM;
    sshape[0] = B; sshape[1] = W;
    if ((r = vit_tensor_init(a, &seed, 2, sshape)) != VIT_OK) return r;
    xb = *x;
    xb.shape[0] = B;
    if (method == VIT_METHOD_IG && ((r = vit_tensor_init(a, &xb, 4, xb.shape)) != VIT_OK ||
                                    !(gsum = (float *)vit_arena_alloc(a, npix * sizeof(float)))))
        return r != VIT_OK ? r : VIT_ERR_OOM;
    if (!counting) {
        for (i = 0; i < B; i++) memcpy(seed.data + (size_t)i * W, seedv, (size_t)W * sizeof(float));
        if (gsum) memset(gsum, 0, npix * sizeof(float));
    }
    memset(&rv, 0, sizeof rv);
    rv.seed = &seed;
    rv.features = p->features;
    if (method == VIT_METHOD_ROLLOUT || method == VIT_METHOD_GRAD_ROLLOUT || method == VIT_METHOD_CHEFER ||
        method == VIT_METHOD_LEGRAD)
        rv.attn = tab;
    if (method == VIT_METHOD_GRAD_ROLLOUT || method == VIT_METHOD_CHEFER || method == VIT_METHOD_LEGRAD)
        rv.grad_attn = tab + L;
    if (method == VIT_METHOD_GRADCAM) {
        rv.tokens = tab + 2 * L;
        if (!(dln1 = (float *)vit_arena_alloc(a, (size_t)T * C * sizeof(float)))) return VIT_ERR_OOM;
    }
    if (method >= VIT_METHOD_SALIENCY) rv.grad_input = tab + 3 * L + 2;
    if (method == VIT_METHOD_ROLLOUT) { /* no gradient: the forward's probabilities are enough */
        vit_forward_opts fo;
        vit_tensor y;
        memset(&fo, 0, sizeof fo);
        fo.attn = tab;
        if (counting) { /* the forward sizes itself against a table of its own */
            size_t fb;
            if ((r = vit_model_memory(m, x, &fo, &fb)) != VIT_OK) return r;
            if (!vit_arena_alloc(a, fb)) return VIT_ERR_OOM;
        } else if ((r = vit__dispatch(m, a, x, &fo, &y)) != VIT_OK) {
            return r;
        }
    } else if (method == VIT_METHOD_IG) {
        /* the path's midpoints baseline + (s + 1/2) / steps (x - baseline), a chunk at a time; gsum sums
           their input gradients in step order */
        for (s0 = 0; s0 < steps; s0 += B) {
            int32_t nb = steps - s0 < B ? steps - s0 : B;
            size_t m2 = vit_arena_mark(a), e;
            xb.shape[0] = nb;
            seed.shape[0] = nb;
            for (i = 0; !counting && i < nb; i++) {
                float t = ((float)(s0 + i) + 0.5f) / (float)steps;
                for (e = 0; e < npix; e++) {
                    float b0 = p->ig_baseline ? p->ig_baseline[e] : 0.0f;
                    xb.data[(size_t)i * npix + e] = b0 + t * (x->data[e] - b0);
                }
            }
            if ((r = vit__reverse(m, a, &xb, &rv, NULL, 0)) != VIT_OK) return r;
            if (counting) break; /* every chunk takes the first's bytes or fewer */
            for (i = 0; i < nb; i++)
                for (e = 0; e < npix; e++) gsum[e] += rv.grad_input[0].data[(size_t)i * npix + e];
            vit_arena_rewind(a, m2);
        }
    } else if ((r = vit__reverse(m, a, &xb, &rv, dln1, method == VIT_METHOD_LEGRAD)) != VIT_OK) {
        return r;
    }

    /* the map from it */
    switch (method) {
    case VIT_METHOD_ROLLOUT:
    case VIT_METHOD_GRAD_ROLLOUT:
    case VIT_METHOD_CHEFER:
        if (counting) { /* vit__roll's scratch */
            if (!vit_arena_alloc(a, 3 * hs * sizeof(float) + (size_t)T * sizeof(float) + hs * sizeof(vit__ranked)))
                return VIT_ERR_OOM;
            break;
        }
        r = vit__roll(a, rv.attn, rv.grad_attn, L, 0, P, query,
                      method == VIT_METHOD_ROLLOUT ? VIT__ROLL_PLAIN
                      : method == VIT_METHOD_CHEFER ? VIT__ROLL_CHEFER
                                                    : VIT__ROLL_GRAD,
                      method == VIT_METHOD_CHEFER ? 0.0f : p->discard_ratio, p->paper_pairing, out, "vit_explain");
        if (r != VIT_OK) return r;
        break;
    case VIT_METHOD_LEGRAD:
        /* each layer: ReLU of its gradient, the mean over heads and queries, per patch key; then the layers' mean */
        for (j = 0; !counting && j < G * G; j++) {
            double s = 0.0;
            for (l = 0; l < L; l++) {
                const float *g = rv.grad_attn[l].data;
                float sl = 0.0f;
                for (h = 0; h < c->heads; h++)
                    for (i = 0; i < T; i++) {
                        float v = g[(size_t)h * hs + (size_t)i * T + P + j];
                        sl += v > 0.0f ? v : 0.0f;
                    }
                s += sl / (float)(c->heads * T);
            }
            out[j] = (float)(s / L);
        }
        break;
    case VIT_METHOD_GRADCAM:
        /* the last block's first LayerNorm's output and gradient over the patch tokens: channel weights are
           the gradient's mean over the patches, the map ReLU(sum_c weight_c activation_c) */
        if ((r = vit__tensor4(a, &ln, 2, T, C, 1, 1)) != VIT_OK) return r;
        if (counting) break;
        vit_k_layernorm(ln.data, rv.tokens[L - 1].data, m->blocks[L - 1].ln1_w.data, m->blocks[L - 1].ln1_b.data, T, C,
                        c->ln_eps);
        for (j = 0; j < G * G; j++) out[j] = 0.0f;
        for (k = 0; k < C; k++) {
            float wk = 0.0f;
            for (j = 0; j < G * G; j++) wk += dln1[(size_t)(P + j) * C + k];
            wk /= (float)(G * G);
            for (j = 0; j < G * G; j++) out[j] += wk * ln.data[(size_t)(P + j) * C + k];
        }
        for (j = 0; j < G * G; j++) out[j] = out[j] > 0.0f ? out[j] : 0.0f;
        break;
    default: { /* the pixels: |grad| max over channels, grad x input, or integrated gradients */
        size_t n = (size_t)S * S, e;
        const float *g = counting || method == VIT_METHOD_IG ? NULL : rv.grad_input[0].data;
        for (e = 0; !counting && e < n; e++) {
            float v = 0.0f;
            for (k = 0; k < Cin; k++) {
                size_t at = (size_t)k * n + e;
                if (method == VIT_METHOD_SALIENCY) {
                    float u = fabsf(g[at]);
                    v = k == 0 || u > v ? u : v;
                } else if (method == VIT_METHOD_GXI) {
                    v += g[at] * x->data[at];
                } else {
                    float b0 = p->ig_baseline ? p->ig_baseline[at] : 0.0f;
                    v += (x->data[at] - b0) * (gsum[at] / (float)steps);
                }
            }
            out[e] = v;
        }
    }
    }
    vit_arena_rewind(a, mark);
    return VIT_OK;
}

/* What vit_explain and its sizing check: a ViT of F32 weights, x (1, C, H, W), the method, seed or class. */
static vit_result vit__explain_check(const vit_model *m, const vit_tensor *x, vit_method method, int32_t cls,
                                     const float *seed, const vit_explain_params *p, const char *who) {
    vit_reverse probe;
    vit_result r;
    int32_t W;
    memset(&probe, 0, sizeof probe);
    if (!p) return vit__fail(VIT_ERR_ARG, "%s: NULL params", who);
    if ((r = vit__reverse_check(m, x, &probe, who)) != VIT_OK) return r;
    if (x->shape[0] != 1)
        return vit__fail(VIT_ERR_SHAPE, "%s: explains one image at a time (B = %d)", who, (int)x->shape[0]);
    if ((int)method < 0 || (int)method >= VIT_METHOD_COUNT)
        return vit__fail(VIT_ERR_ARG, "%s: unknown method %d", who, (int)method);
    if (!(p->discard_ratio >= 0.0f && p->discard_ratio < 1.0f))
        return vit__fail(VIT_ERR_ARG, "%s: discard_ratio %g outside [0, 1)", who, (double)p->discard_ratio);
    if (p->ig_steps < 0 || p->ig_steps > 4096)
        return vit__fail(VIT_ERR_ARG, "%s: ig_steps %d outside 0..4096", who, (int)p->ig_steps);
    W = vit_model_output_width(m, p->features);
    if (!seed && (cls < 0 || cls >= W))
        return vit__fail(VIT_ERR_ARG, "%s: class %d outside 0..%d%s", who, (int)cls, (int)W - 1,
                         m->cfg.num_classes && !p->features ? "" : " (this model has no classes: give a seed vector)");
    return VIT_OK;
}

VITDEF vit_result vit_explain(const vit_model *m, vit_arena *act, const vit_tensor *x, vit_method method, int32_t cls,
                              const float *seed, const vit_explain_params *p, float *out) {
    vit_result r;
    size_t mark, n, i;
    float *sv;
    int32_t W;
    if (!m || !act || !x || !x->data || !out) return vit__fail(VIT_ERR_ARG, "vit_explain: NULL argument");
    if (vit_arena_counting(act))
        return vit__fail(VIT_ERR_ARG, "vit_explain: act is a counting arena; size one with vit_explain_memory");
    if ((r = vit__explain_check(m, x, method, cls, seed, p, "vit_explain")) != VIT_OK) return r;
    n = vit_tensor_numel(x);
    if (!vit__all_finite(x->data, n)) return vit__fail(VIT_ERR_NONFINITE, "vit_explain: the input holds a NaN or Inf");
    W = vit_model_output_width(m, p->features);
    if (seed && !vit__all_finite(seed, (size_t)W))
        return vit__fail(VIT_ERR_NONFINITE, "vit_explain: the seed holds a NaN or Inf");
    mark = vit_arena_mark(act);
    if (!(sv = (float *)vit_arena_alloc(act, (size_t)W * sizeof(float)))) return VIT_ERR_OOM;
    for (i = 0; i < (size_t)W; i++) sv[i] = seed ? seed[i] : (int32_t)i == cls ? 1.0f : 0.0f;
    r = vit__explain(m, act, x, method, sv, p, out);
    vit_arena_rewind(act, mark);
    return r;
}

VITDEF vit_result vit_explain_memory(const vit_model *m, const vit_tensor *x, vit_method method,
                                     const vit_explain_params *p, size_t *act_bytes) {
    vit_arena counter;
    vit_tensor probe;
    vit_result r;
    if (!act_bytes) return vit__fail(VIT_ERR_ARG, "vit_explain_memory: NULL argument");
    if ((r = vit__explain_check(m, x, method, 0, (const float *)(uintptr_t)VIT_ALIGN, p, "vit_explain_memory")) !=
        VIT_OK)
        return r;
    vit_arena_init(&counter, NULL, 0);
    probe = *x;
    probe.data = (float *)(uintptr_t)VIT_ALIGN; /* never read while counting */
    if (!vit_arena_alloc(&counter, (size_t)vit_model_output_width(m, p->features) * sizeof(float))) return VIT_ERR_OOM;
    if ((r = vit__explain(m, &counter, &probe, method, NULL, p, NULL)) != VIT_OK) return r;
    *act_bytes = counter.peak + VIT_ALIGN;
    return VIT_OK;
}

/* ---- model: position-embedding interpolation ---- */

/* Keys' cubic convolution kernel with parameter A at distance |x|. */
static double vit__keys(double x, double A) {
    x = fabs(x);
    if (x < 1.0) return ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    if (x < 2.0) return ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
    return 0.0;
}

/* The taps of one axis resized from n to n2 positions: output o is
   sum_j w[o K + j] in[idx[o K + j]], j < cnt[o] <= K. K: 4, or the
   antialiased filter's width when it shrinks. Weights follow
   PyTorch's CPU kernels: float source coordinates for the plain bicubic,
   PIL's normalised taps for antialias. */
static int32_t vit__pos_taps_k(int32_t n, int32_t n2, vit_pos_resize how) {
    double scale = (double)n / n2;
    return how == VIT_POS_TIMM && scale > 1.0 ? (int32_t)ceil(2.0 * scale) * 2 + 1 : 4;
}
static void vit__pos_taps(int32_t n, int32_t n2, vit_pos_resize how, int32_t K, int32_t *idx, float *w, int32_t *cnt) {
    int32_t o, j;
    for (o = 0; o < n2; o++) {
        int32_t *io = idx + (size_t)o * K;
        float *wo = w + (size_t)o * K;
        if (how == VIT_POS_TIMM) {
            float scale = (float)n / (float)n2;
            double support = scale >= 1.0f ? 2.0 * scale : 2.0, inv = scale >= 1.0f ? 1.0 / scale : 1.0, total = 0.0;
            double center = scale * (o + 0.5);
            int32_t lo = (int32_t)(center - support + 0.5), hi = (int32_t)(center + support + 0.5);
            if (lo < 0) lo = 0;
            if (hi > n) hi = n;
            if (hi - lo > K) hi = lo + K;
            for (j = 0; j < hi - lo; j++) total += vit__keys((j + lo - center + 0.5) * inv, -0.5);
            for (j = 0; j < hi - lo; j++) {
                io[j] = lo + j;
                wo[j] = (float)(total != 0.0 ? vit__keys((j + lo - center + 0.5) * inv, -0.5) / total : 0.0);
            }
            cnt[o] = hi - lo;
        } else {
            /* align_corners=True: o (n - 1) / (n2 - 1); False: (o + 1/2) n / n2 - 1/2 */
            float src = how == VIT_POS_TORCHVISION ? (n2 > 1 ? (float)(n - 1) / (float)(n2 - 1) * (float)o : 0.0f)
                                                   : (float)n / (float)n2 * ((float)o + 0.5f) - 0.5f;
            int32_t i0 = (int32_t)floorf(src);
            float t;
            if (i0 > n - 1) i0 = n - 1;
            t = src - (float)i0;
            t = t < 0.0f ? 0.0f : t > 1.0f ? 1.0f : t;
            for (j = 0; j < 4; j++) {
                int32_t at = i0 - 1 + j;
                io[j] = at < 0 ? 0 : at > n - 1 ? n - 1 : at;
                wo[j] = (float)vit__keys((double)t - (j - 1), -0.75);
            }
            cnt[o] = 4;
        }
    }
}

VITDEF vit_result vit_model_set_image_size(vit_model *m, int32_t image_size) {
    return vit_model_set_image_size_ex(m, image_size, VIT_POS_AUTO);
}

VITDEF vit_result vit_model_set_image_size_ex(vit_model *m, int32_t image_size, vit_pos_resize how) {
    int32_t P, G, G2, C, T2, K, c, y, x, i, j, pp;
    vit_arena ex, tmp;
    int32_t *idx, *cnt;
    float *pos, *w;
    size_t bytes;
    vit_result r;

    /* a loaded ViT, a known mode, and a size the patches tile */
    if (!m || !m->arena.base)
        return vit__fail(
            VIT_ERR_ARG,
            "vit_model_set_image_size: the model is not loaded (zeroed by a failed load or vit_model_free)");
    if (m->kind != VIT_KIND_VIT) return vit__fail(VIT_ERR_ARG, "vit_model_set_image_size: not a ViT");
    if (how < VIT_POS_AUTO || how > VIT_POS_HF)
        return vit__fail(VIT_ERR_ARG, "vit_model_set_image_size: unknown resize mode %d", (int)how);
    if (how == VIT_POS_AUTO)
        how = ((const vit__vit_naming *)vit__naming_of(m))->resize;
    if (m->cfg.rel_pos)
        return vit__fail(VIT_ERR_UNSUPPORTED,
                         "vit_model_set_image_size: a relative position bias runs at its own image size only (%d): "
                         "resizing its tables (timm's resize_rel_pos_bias_table; transformers' BEiT resamples them "
                         "bilinearly at any other size) is not in vit.h",
                         (int)m->cfg.image_size);
    if (!m->cfg.pos_embed && !m->cfg.rope)
        return vit__fail(VIT_ERR_UNSUPPORTED,
                         "vit_model_set_image_size: a model without a position embedding or rotary embeddings runs "
                         "at its own image size only (%d) in vit.h",
                         (int)m->cfg.image_size);
    P = m->cfg.patch_size; G = m->cfg.image_size / P; C = m->cfg.dim;
    if (image_size > 8192)
        return vit__fail(VIT_ERR_ARG,
                         "vit_model_set_image_size: %d is more than 8192, the largest image size vit.h takes",
                         (int)image_size);
    if (image_size < P || image_size % P)
        return vit__fail(VIT_ERR_ARG, "vit_model_set_image_size: %d is not a positive multiple of the patch size %d",
                         (int)image_size, (int)P);
    G2 = image_size / P;
    pp = m->cfg.pos_prefix;
    T2 = G2 * G2 + pp;
    if (T2 > 16384)
        return vit__fail(VIT_ERR_UNSUPPORTED, "vit_model_set_image_size: %d tokens is more than 16384", (int)T2);

    /* the taps, in a temporary arena; the new table in its own, which replaces m->extra */
    K = vit__pos_taps_k(G, G2, how); /* G, G2 <= 8192, so K * G2 stays small */
    bytes = (size_t)G2 * K * (sizeof(int32_t) + sizeof(float)) + (size_t)G2 * sizeof(int32_t) + VIT_ALIGN;
    if ((r = vit_arena_init_alloc(&tmp, bytes + VIT_ALIGN)) != VIT_OK) return r;
    if ((r = vit_arena_init_alloc(&ex, (size_t)T2 * C * sizeof(float) + VIT_ALIGN +
                                           (m->cfg.rope ? vit__rope_floats(&m->cfg, G2) * sizeof(float) : 0))) !=
        VIT_OK) {
        vit_arena_free(&tmp);
        return r;
    }
    idx = (int32_t *)vit_arena_alloc(&tmp, (size_t)G2 * K * sizeof(int32_t));
    w = (float *)vit_arena_alloc(&tmp, (size_t)G2 * K * sizeof(float));
    cnt = (int32_t *)vit_arena_alloc(&tmp, (size_t)G2 * sizeof(int32_t));
    vit__pos_taps(G, G2, how, K, idx, w, cnt);
    pos = (float *)vit_arena_alloc(&ex, (size_t)T2 * C * sizeof(float)); /* ex is sized for it (and the rotary table) */

    /* The prefix tokens' positions untouched; the (C, G, G) grid resized
       separably: the weighted sum along x of each source row, then along
       y, as PyTorch's kernels order it. A model with rotary embeddings
       alone has no table to resize. */
    if (m->cfg.pos_embed) memcpy(pos, m->patch_w.pos.data, (size_t)pp * C * sizeof(float));
    for (y = 0; m->cfg.pos_embed && y < G2; y++)
        for (x = 0; x < G2; x++) {
            const int32_t *iy = idx + (size_t)y * K, *ix = idx + (size_t)x * K;
            const float *wy = w + (size_t)y * K, *wx = w + (size_t)x * K;
            for (c = 0; c < C; c++) {
                float acc = 0.0f;
                for (i = 0; i < cnt[y]; i++) {
                    float row = 0.0f;
                    for (j = 0; j < cnt[x]; j++)
                        row += wx[j] * m->patch_w.pos.data[(size_t)(pp + iy[i] * G + ix[j]) * C + c];
                    acc += wy[i] * row;
                }
                pos[(size_t)(pp + y * G2 + x) * C + c] = acc;
            }
        }

    /* the new table replaces the old, and the model now expects the new size */
    vit_arena_free(&tmp);
    vit_arena_free(&m->extra);
    m->extra = ex;
    if (m->cfg.pos_embed) {
        m->patch_w.pos.data = pos;
        m->patch_w.pos.ndim = 2;
        m->patch_w.pos.shape[0] = T2;
        m->patch_w.pos.shape[1] = C;
    }
    m->cfg.image_size = image_size;
    m->patch.image_size = image_size;

    /* the rotary tables of the new grid, as timm's get_embed makes them for dynamic_img_size */
    if (m->cfg.rope)
        vit__rope_build(m, (float *)vit_arena_alloc(&m->extra, vit__rope_floats(&m->cfg, G2) * sizeof(float)), G2);
    return VIT_OK;
}


/* ---- I/O: writing a file whole ---- */

#ifndef VIT_NO_STDIO
#if defined(_WIN32)
/* Kernel32's, declared here to keep <windows.h> (and its macros) out of
   the user's file; the same declaration as windows.h's. */
#ifdef __cplusplus
extern "C"
#endif
__declspec(dllimport) int __stdcall MoveFileExA(const char *from, const char *to, unsigned long flags);
#endif
#if defined(VIT__HAVE_MMAP) && defined(__GLIBC__) && !defined(__cplusplus)
/* glibc declares these POSIX.1-2001 functions only when a feature macro
   asks for them, and -std=c99 alone does not; libc has them all the same.
   The guards are <unistd.h>'s and <sys/stat.h>'s own; the types glibc's
   own names, which they define whatever the feature macros. */
#if !defined(__USE_XOPEN_EXTENDED) && !defined(__USE_XOPEN2K)
extern __ssize_t readlink(const char *path, char *buf, size_t size);
#endif
#if !defined(__USE_POSIX199309) && !defined(__USE_XOPEN_EXTENDED)
extern int fchmod(int fd, __mode_t mode);
#endif
#if !defined(__USE_XOPEN_EXTENDED) && !defined(__USE_XOPEN2K8)
extern int fchown(int fd, __uid_t owner, __gid_t group);
#endif
#endif

/* The longest path the system takes; a link's text is read into a buffer
   one byte longer, so a longer one shows as filling it. */
#if defined(PATH_MAX)
#define VIT__PATH_MAX PATH_MAX
#else
#define VIT__PATH_MAX 4096
#endif

/* Writes part[0..n) (len[i] bytes each) to f, flushes and closes it; 0 on
   any error, errno's value for it in *err. f is closed either way. */
static int vit__write_close(FILE *f, int n, const void *const *part, const size_t *len, int *err) {
    int i, ok = 1;
    for (i = 0; i < n && ok; i++) ok = !len[i] || fwrite(part[i], 1, len[i], f) == len[i];
    ok = ok && fflush(f) == 0 && !ferror(f);
    *err = errno;
    if (fclose(f) != 0 && ok) {
        ok = 0;
        *err = errno;
    }
    return ok;
}

/* The length of path's folder part, its last separator included ("" for
   a bare name). */
static size_t vit__dir_len(const char *path) {
    size_t d = strlen(path);
    while (d > 0 && path[d - 1] != '/'
#if defined(_WIN32)
           && path[d - 1] != '\\' && path[d - 1] != ':'
#endif
    )
        d--;
    return d;
}

/* The names a save uses, in one allocation sized from path's length: no
   fixed limit but the system's own. */
typedef struct vit__save_names {
    vit_arena mem;
    char *file; /* the file to replace: path, its symbolic links followed */
    char *tmp;  /* the temporary file in file's folder */
    char *via;  /* "" or " (a link to FILE)", for the messages */
} vit__save_names;

/* Fills s->file from path: a symbolic link is followed (at most 40, as
   Linux does) to the file it names, so the link stays a link and that file
   gets the data, as fopen would write it. A dangling link names a file to
   create. Other failures of readlink (EINVAL: not a link; a folder that
   does not exist) are left for creating the temporary file to report. */
static vit_result vit__save_names_init(vit__save_names *s, const char *path) {
    size_t n = strlen(path), cap = n + VIT__PATH_MAX + 2;
    memset(s, 0, sizeof *s);
    if (vit_arena_init_alloc(&s->mem, 4 * cap + 64 + 8 * VIT_ALIGN) != VIT_OK)
        return vit__fail(VIT_ERR_OOM, "%s: no memory for the names of its temporary file", path);
    s->file = (char *)vit_arena_alloc(&s->mem, cap);
    s->tmp = (char *)vit_arena_alloc(&s->mem, cap + 64);
    s->via = (char *)vit_arena_alloc(&s->mem, cap + 16);
    memcpy(s->file, path, n + 1);
    s->via[0] = 0;
#ifdef VIT__HAVE_MMAP
    {
        char *link = (char *)vit_arena_alloc(&s->mem, VIT__PATH_MAX + 1);
        ssize_t got;
        size_t len, d;
        int hops = 0;
        while ((got = readlink(s->file, link, VIT__PATH_MAX + 1)) >= 0) {
            len = (size_t)got;
            if (++hops > 40) return vit__fail(VIT_ERR_IO, "%s: too many levels of symbolic links", path);
            d = link[0] == '/' ? 0 : vit__dir_len(s->file); /* a relative link is relative to its own folder */
            if (len > VIT__PATH_MAX || d + len >= cap)
                return vit__fail(VIT_ERR_IO, "%s: its symbolic links lead to a path longer than %d bytes", path,
                                 (int)VIT__PATH_MAX);
            memmove(s->file + d, link, len);
            s->file[d + len] = 0;
        }
        if (hops) snprintf(s->via, cap + 16, " (a link to %s)", s->file);
    }
#endif
    return VIT_OK;
}

/* Writes the parts to path atomically: into a temporary file in the same
   folder, every write, the flush and the close checked, then renamed over
   path. On failure (a full disk, a missing folder) path keeps its previous
   contents, the temporary is removed, and VIT_ERR_IO carries errno's text.
   A path that exists and is not a regular file (a device such as
   /dev/null, a pipe) cannot be replaced: it is written in place. A
   symbolic link is written through: the file it names is replaced, the
   link stays. The file keeps its mode and, where the process may give it,
   its owner; a new file gets 0666 less the umask, as fopen gives. */
static vit_result vit__save(const char *path, int n, const void *const *part, const size_t *len) {
    vit__save_names s;
    vit_result r;
    FILE *f = NULL;
    int k, ok, err, have = 0; /* have: path names a regular file, sb its mode and owner */
#ifdef VIT__HAVE_MMAP
    int fd = -1;
#endif
#ifdef VIT__HAVE_STAT
    struct stat sb;

    /* not a regular file (a device, a pipe): written in place, there is nothing to rename over */
    if (stat(path, &sb) == 0) {
        if (VIT__IS_DIR(sb.st_mode)) return vit__fail(VIT_ERR_IO, "%s: is a directory, not a file", path);
        if (!VIT__IS_REG(sb.st_mode)) {
            if (!(f = fopen(path, "wb"))) return vit__fail(VIT_ERR_IO, "%s: cannot open (%s)", path, strerror(errno));
            return vit__write_close(f, n, part, len, &err)
                       ? VIT_OK
                       : vit__fail(VIT_ERR_IO, "%s: write failed (%s)", path, strerror(err));
        }
        have = 1;
    }
#endif
    if ((r = vit__save_names_init(&s, path)) != VIT_OK) {
        vit_arena_free(&s.mem);
        return r;
    }

    /* Otherwise a temporary file beside it, renamed over it, so a failed
       write leaves it intact. Its name is short whatever path's is, so it
       stays within NAME_MAX, and unused by any other writer: O_EXCL where
       there is POSIX, else a check that it does not exist yet. Over an
       existing file it is made 0600 and given that file's mode once
       written, never readable by more than the file was. */
    for (k = 0; k < 100 && !f; k++) {
        size_t d = vit__dir_len(s.file);
        memcpy(s.tmp, s.file, d);
#ifdef VIT__HAVE_MMAP
        snprintf(s.tmp + d, 64, ".vit-%ld-%d.tmp", (long)getpid(), k);
        fd = open(s.tmp, O_WRONLY | O_CREAT | O_EXCL, have ? 0600 : 0666);
        if (fd >= 0) {
            if (!(f = fopen(s.tmp, "wb"))) {
                err = errno;
                close(fd);
                remove(s.tmp);
                errno = err;
                break;
            }
        } else if (errno != EEXIST) break;
#else
        snprintf(s.tmp + d, 64, ".vit-%lx-%d.tmp", (unsigned long)(uintptr_t)&f, k);
        if ((f = fopen(s.tmp, "rb")) != NULL) { fclose(f); f = NULL; continue; }
        f = fopen(s.tmp, "wb");
        if (!f) break;
#endif
    }
    if (!f) {
        r = vit__fail(VIT_ERR_IO, "%s%s: cannot create a file beside it (%s)", path, s.via, strerror(errno));
        vit_arena_free(&s.mem);
        return r;
    }

    ok = vit__write_close(f, n, part, len, &err);
#ifdef VIT__HAVE_MMAP
    /* The old file's owner, then its mode (a change of owner can clear the
       set-id bits). */
    if (ok && have && fchown(fd, sb.st_uid, sb.st_gid) != 0) {
        /* only root may give a file away: the new file stays ours, as fopen's would be */
    }
    if (ok && have && fchmod(fd, sb.st_mode & 07777) != 0) {
        close(fd);
        remove(s.tmp);
        r = vit__fail(VIT_ERR_IO, "%s%s: cannot give the new file the old one's mode %o (%s); the file is unchanged",
                      path, s.via, (unsigned)(sb.st_mode & 07777), strerror(errno));
        vit_arena_free(&s.mem);
        return r;
    }
    close(fd);
#endif
    (void)have;
    if (ok) {
#if defined(_WIN32)
        ok = MoveFileExA(s.tmp, s.file, 1 /* MOVEFILE_REPLACE_EXISTING */) != 0;
        if (!ok) err = EACCES;
#else
        ok = rename(s.tmp, s.file) == 0;
        err = errno;
#endif
        if (!ok) {
            remove(s.tmp);
            r = vit__fail(VIT_ERR_IO, "%s%s: cannot replace it (%s)", path, s.via, strerror(err));
        } else r = VIT_OK;
    } else {
        remove(s.tmp);
        r = vit__fail(VIT_ERR_IO, "%s%s: write failed (%s); the file is unchanged", path, s.via, strerror(err));
    }
    vit_arena_free(&s.mem);
    return r;
}
#endif

/* ---- I/O: npy ---- */
/* NumPy's .npy: magic, version, a Python dict literal as header, raw data.
   Reads '<f4' (and '<f8', narrowed to float32), C order only. The header
   is read as strictly as numpy reads it: a dict with exactly the keys
   descr, fortran_order and shape, each once, nothing after it but
   padding, at most numpy's 10000 bytes. */

#define VIT__NPY_MAX_HEADER 10000

typedef struct vit__npy {
    size_t off;                  /* where the data starts */
    int esize;                   /* 4 ('<f4') or 8 ('<f8') */
    int32_t ndim, shape[VIT_MAX_DIMS];
    size_t numel;
} vit__npy;

static void vit__npy_ws(const char **p, const char *end) {
    while (*p < end && (**p == ' ' || **p == '\t' || **p == '\n' || **p == '\r')) (*p)++;
}

/* A quoted string ('...' or "...", no escapes or control bytes) into out
   (n bytes); 0 if there is none. */
static int vit__npy_str(const char **p, const char *end, char *out, size_t n) {
    char q;
    size_t k = 0;
    if (*p >= end || (**p != '\'' && **p != '"')) return 0;
    q = *(*p)++;
    for (; *p < end && **p != q; (*p)++) {
        if (**p == '\\' || (unsigned char)**p < 0x20 || k + 1 >= n) return 0;
        out[k++] = **p;
    }
    if (*p >= end) return 0;
    (*p)++;
    out[k] = 0;
    return 1;
}

/* The shape tuple: "()", "(3,)", "(2, 3)", "(2, 3,)"; Python's "(3)" is
   an int, not a tuple. Dimensions are decimal, 1..INT32_MAX. */
static vit_result vit__npy_shape(const char **p, const char *end, vit__npy *h) {
    int commas = 0;
    if (*p >= end || **p != '(') return vit__fail(VIT_ERR_FORMAT, "npy: 'shape' is not a tuple");
    (*p)++;
    for (;;) {
        const char *d;
        int64_t v = 0;
        vit__npy_ws(p, end);
        if (*p < end && **p == ')') break;
        for (d = *p; *p < end && **p >= '0' && **p <= '9'; (*p)++)
            if ((v = v * 10 + (**p - '0')) > INT32_MAX)
                return vit__fail(VIT_ERR_SHAPE, "npy: a dimension in the shape is larger than %d", INT32_MAX);
        if (*p == d || (*d == '0' && *p - d > 1)) /* no digits, or a leading zero */
            return vit__fail(VIT_ERR_FORMAT, "npy: 'shape' is not a tuple of integers");
        if (v == 0) return vit__fail(VIT_ERR_SHAPE, "npy: a zero dimension in the shape (an empty array)");
        if (h->ndim >= VIT_MAX_DIMS) return vit__fail(VIT_ERR_SHAPE, "npy: more than %d dimensions", VIT_MAX_DIMS);
        h->shape[h->ndim++] = (int32_t)v;
        vit__npy_ws(p, end);
        if (*p < end && **p == ',') { (*p)++; commas++; }
        else if (*p >= end || **p != ')') return vit__fail(VIT_ERR_FORMAT, "npy: 'shape' is not a tuple of integers");
    }
    (*p)++;
    if (h->ndim == 1 && !commas)
        return vit__fail(VIT_ERR_FORMAT, "npy: 'shape' (%d) is an integer, not a tuple (numpy writes (%d,))",
                         (int)h->shape[0], (int)h->shape[0]);
    return VIT_OK;
}

/* The magic, version and header among the first `avail` bytes of a .npy
   of `size` bytes; the data must fit in the file. */
static vit_result vit__npy_header(const unsigned char *b, size_t avail, size_t size, vit__npy *h) {
    const char *p, *end;
    size_t hlen, off;
    int seen = 0, k;
    vit_result r;
    memset(h, 0, sizeof *h);

    /* magic, version, and a header length that fits in the file */
    if (avail < 10 || memcmp(b, "\x93NUMPY", 6)) return vit__fail(VIT_ERR_FORMAT, "npy: not a .npy file (bad magic)");
    if (b[6] == 1) { hlen = (size_t)b[8] | (size_t)b[9] << 8; off = 10;
    } else if ((b[6] == 2 || b[6] == 3) && avail >= 12) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        off = 12;
    } else
        return vit__fail(VIT_ERR_FORMAT, "npy: unsupported version %d.%d", b[6], b[7]);
    if (hlen > VIT__NPY_MAX_HEADER)
        return vit__fail(VIT_ERR_FORMAT, "npy: a header of %zu bytes; numpy reads at most %d", hlen,
                         VIT__NPY_MAX_HEADER);
    if (hlen > avail - off)
        return vit__fail(VIT_ERR_FORMAT, "npy: header of %zu bytes is longer than the file (truncated?)", hlen);

    /* the header dict: descr, fortran_order and shape, each once */
    p = (const char *)b + off;
    end = p + hlen;
    vit__npy_ws(&p, end);
    if (p >= end || *p++ != '{') return vit__fail(VIT_ERR_FORMAT, "npy: the header is not a Python dict");
    for (;;) {
        static const char *const keys[3] = {"descr", "fortran_order", "shape"};
        char key[32], val[32];
        vit__npy_ws(&p, end);
        if (p < end && *p == '}') break;
        if (!vit__npy_str(&p, end, key, sizeof key))
            return vit__fail(VIT_ERR_FORMAT, "npy: the header is not a Python dict (no key at byte %zu)",
                             (size_t)(p - (const char *)b));
        for (k = 0; k < 3 && strcmp(key, keys[k]); k++) {}
        if (k == 3)
            return vit__fail(VIT_ERR_FORMAT, "npy: key '%s' in the header; numpy writes descr, fortran_order and shape",
                             key);
        if (seen & 1 << k) return vit__fail(VIT_ERR_FORMAT, "npy: key '%s' appears twice in the header", key);
        seen |= 1 << k;
        vit__npy_ws(&p, end);
        if (p >= end || *p++ != ':')
            return vit__fail(VIT_ERR_FORMAT, "npy: the header is not a Python dict (no ':' after '%s')", key);
        vit__npy_ws(&p, end);
        if (k == 0) {
            if (!vit__npy_str(&p, end, val, sizeof val))
                return vit__fail(VIT_ERR_FORMAT, "npy: 'descr' is not a string");
            if (!strcmp(val, "<f4")) h->esize = 4;
            else if (!strcmp(val, "<f8")) h->esize = 8;
            else return vit__fail(VIT_ERR_DTYPE, "npy: dtype '%s' is not float32 ('<f4') or float64 ('<f8')", val);
        } else if (k == 1) {
            int t = (size_t)(end - p) >= 4 && !memcmp(p, "True", 4),
                f = (size_t)(end - p) >= 5 && !memcmp(p, "False", 5);
            p += t ? 4 : f ? 5 : 0;
            if ((!t && !f) || (p < end && ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                                           (*p >= '0' && *p <= '9') || *p == '_')))
                return vit__fail(VIT_ERR_FORMAT, "npy: 'fortran_order' is not True or False");
            if (t) return vit__fail(VIT_ERR_FORMAT, "npy: only C-order arrays are supported (fortran_order is True)");
        } else if ((r = vit__npy_shape(&p, end, h)) != VIT_OK) return r;
        vit__npy_ws(&p, end);
        if (p < end && *p == ',') p++;
        else if (p >= end || *p != '}')
            return vit__fail(VIT_ERR_FORMAT, "npy: the header is not a Python dict (no ',' or '}' after '%s')", key);
    }

    /* only padding after the dict, and every key present */
    for (p++; p < end; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
            return vit__fail(VIT_ERR_FORMAT, "npy: bytes after the header's dict");
    for (k = 0; k < 3; k++)
        if (!(seen & 1 << k))
            return vit__fail(VIT_ERR_FORMAT, "npy: the header has no '%s'",
                             k == 0   ? "descr"
                             : k == 1 ? "fortran_order"
                                      : "shape");

    /* the element count, which the data after the header must hold */
    if (h->ndim == 0) h->shape[h->ndim++] = 1; /* a scalar */
    for (h->numel = 1, k = 0; k < h->ndim; k++)
        if (!vit__mul_ok(h->numel, (size_t)h->shape[k], &h->numel))
            return vit__fail(VIT_ERR_OVERFLOW, "npy: element count overflows");
    h->off = off + hlen;
    if (h->numel > (size - h->off) / (size_t)h->esize)
        return vit__fail(VIT_ERR_FORMAT, "npy: shape needs %zu values, the file holds %zu (truncated?)", h->numel,
                         (size - h->off) / (size_t)h->esize);
    return VIT_OK;
}

/* n values of esize bytes at src into float32 dst. */
static void vit__npy_values(float *dst, const unsigned char *src, size_t n, int esize) {
    size_t i;
    if (esize == 4) memcpy(dst, src, n * 4);
    else
        for (i = 0; i < n; i++) {
            double d;
            memcpy(&d, src + i * 8, 8);
            dst[i] = (float)d;
        }
}

VITDEF vit_result vit_npy_load_memory(vit_arena *a, const void *data, size_t size, vit_tensor *t) {
    vit__npy h;
    vit_tensor out;
    vit_result r;
    if (!a || !data || !t) return vit__fail(VIT_ERR_ARG, "npy: NULL argument");
    if ((r = vit__npy_header((const unsigned char *)data, size, size, &h)) != VIT_OK) return r;
    if ((r = vit_tensor_init(a, &out, h.ndim, h.shape)) != VIT_OK) return r;
    if (!vit_arena_counting(a)) vit__npy_values(out.data, (const unsigned char *)data + h.off, h.numel, h.esize);
    *t = out;
    return VIT_OK;
}

#ifndef VIT_NO_STDIO
/* r, with `path: ` put before the message of a failure. */
static vit_result vit__in_file(const char *path, vit_result r) {
    if (r != VIT_OK) {
        char msg[sizeof vit__err];
        snprintf(msg, sizeof msg, "%s", vit__err);
        vit__fail(r, "%s: %s", path, msg);
    }
    return r;
}

VITDEF vit_result vit_npy_load(vit_arena *a, const char *path, vit_tensor *t) {
    unsigned char head[12 + VIT__NPY_MAX_HEADER];
    size_t size, got, mark;
    vit__npy h;
    vit_tensor out;
    vit_result r;
    FILE *f;
    if (!a || !path || !t) return vit__fail(VIT_ERR_ARG, "npy: NULL argument");
    /* The header first: its shape is checked against the file's size, and
       the data is read straight into the tensor, never whole elsewhere. */
    if ((r = vit__file_size(path, &size)) != VIT_OK) return r;
    if (!(f = fopen(path, "rb"))) return vit__fail(VIT_ERR_IO, "%s: cannot open (%s)", path, strerror(errno));
    got = fread(head, 1, size < sizeof head ? size : sizeof head, f);
    mark = vit_arena_mark(a);
    if ((r = vit__npy_header(head, got, size, &h)) != VIT_OK ||
        (r = vit_tensor_init(a, &out, h.ndim, h.shape)) != VIT_OK) {
        fclose(f);
        return vit__in_file(path, r);
    }
    if (!vit_arena_counting(a)) {
        size_t done = 0, n;
        int ok = fseek(f, (long)h.off, SEEK_SET) == 0;
        if (h.esize == 4) done = ok ? fread(out.data, 4, h.numel, f) : 0;
        while (ok && h.esize == 8 && done < h.numel) { /* narrowed in pieces */
            n = h.numel - done < sizeof head / 8 ? h.numel - done : sizeof head / 8;
            if (fread(head, 8, n, f) != n) break;
            vit__npy_values(out.data + done, head, n, 8);
            done += n;
        }
        if (done != h.numel) {
            fclose(f);
            vit_arena_rewind(a, mark);
            return vit__fail(VIT_ERR_IO, "%s: short read (%zu of %zu values; did the file change?)", path, done,
                             h.numel);
        }
    }
    fclose(f);
    *t = out;
    return VIT_OK;
}

VITDEF vit_result vit_npy_save(const char *path, const vit_tensor *t) {
    char h[256];
    unsigned char magic[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
    const void *part[3];
    size_t n, hl, len[3];
    int32_t i;
    if (!path || !t || !t->data) return vit__fail(VIT_ERR_ARG, "npy: NULL argument");
    if (t->ndim < 1 || t->ndim > VIT_MAX_DIMS)
        return vit__fail(VIT_ERR_ARG, "npy: tensor has %d dimensions", (int)t->ndim);
    n = (size_t)snprintf(h, sizeof h, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
    for (i = 0; i < t->ndim; i++)
        n += (size_t)snprintf(h + n, sizeof h - n, "%d,%s", (int)t->shape[i], i + 1 < t->ndim ? " " : "");
    n += (size_t)snprintf(h + n, sizeof h - n, "), }");
    /* Pad with spaces so that data starts on a 64-byte boundary. */
    hl = (10 + n + 1 + 63) / 64 * 64 - 10;
    while (n < hl - 1) h[n++] = ' ';
    h[n++] = '\n';
    magic[8] = (unsigned char)(hl & 255);
    magic[9] = (unsigned char)(hl >> 8);
    part[0] = magic; len[0] = sizeof magic;
    part[1] = h; len[1] = hl;
    part[2] = t->data; len[2] = vit_tensor_numel(t) * sizeof(float);
    return vit__save(path, 3, part, len);
}
#endif

/* ---- I/O: images ---- */

#if !defined(VIT_NO_IMAGE) || (!defined(VIT_NO_STDIO) && !defined(VIT_NO_PNG))
/* stb allocates through VIT_MALLOC/VIT_FREE; it needs a sized realloc. */
static void *vit__realloc_sized(void *p, size_t old, size_t size) {
    void *q = VIT_MALLOC(size);
    if (q && p) memcpy(q, p, old < size ? old : size);
    if (q) VIT_FREE(p);
    return q;
}
#endif

#ifndef VIT_NO_IMAGE
#if !defined(STBI_INCLUDE_STB_IMAGE_H)
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_MALLOC(sz) VIT_MALLOC(sz)
#define STBI_FREE(p) VIT_FREE(p)
#define STBI_REALLOC_SIZED(p, old, sz) vit__realloc_sized(p, old, sz)
#define STBI_ASSERT(x) VIT_ASSERT(x)
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
/* Only the formats vit__image_check checks first, and GIF: without it
   stb_image 2.27 declares stbi_load_gif_from_memory static and never
   defines it, which GCC reports past any pragma. vit__image_check refuses
   GIF files, so its decoder is never reached. */
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_ONLY_PNM
#define STBI_ONLY_GIF
/* stb_image 2.27 declares stbi_set_unpremultiply_on_load_thread static
   and defines it as stbi__unpremultiply_on_load_thread, and GCC reports
   the undefined declaration at the end of the file, past any pragma. One
   name for both makes it an ordinary unused function (as in later
   versions, which define the declared name). */
#define stbi_set_unpremultiply_on_load_thread stbi__unpremultiply_on_load_thread
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#endif
#ifdef VIT_STB_FLAT
#include "stb_image.h"
#else
#include <stb/stb_image.h>
#endif
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop
#endif
#undef stbi_set_unpremultiply_on_load_thread
#endif

/* Every file is checked here before stb_image sees it, so that what stb
   reads is known to be there: stb_image 2.27 decodes a truncated file into
   zeros or uninitialised memory, and reads tables a file never defined.
   Each format gets one structure check, which refuses what PIL refuses
   (a truncated file) and what stb_image cannot take safely, and names the
   problem. Pixel data a header declares must fit in the file: exactly for
   BMP and PNM, by the densest coding the format allows for PNG (deflate
   packs at most 1032 bytes into one) and JPEG (an 8x8 block takes at
   least 2 bits, 1 in a progressive DC scan). */

typedef struct vit__img_info {
    const char *format;   /* "PNG", "JPEG", "BMP", "PNM" */
    size_t plte_at;       /* PNG: byte where a PLTE of fewer than 256 colours starts, else 0 */
    uint32_t plte_len;    /* PNG: its data bytes */
    int32_t pnm_max;      /* PNM: the max value (1..255) */
    int32_t pnm_channels; /* PNM: 1 (P5) or 3 (P6) */
} vit__img_info;

static uint32_t vit__be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static uint32_t vit__le32(const unsigned char *p) {
    return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}
static uint32_t vit__le16(const unsigned char *p) { return (uint32_t)p[1] << 8 | p[0]; }

/* CRC-32 as PNG chunks use it: the table, then the CRC of n bytes. */
static void vit__crc_table(uint32_t table[256]) {
    uint32_t i, c;
    int k;
    for (i = 0; i < 256; i++) {
        for (c = i, k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
        table[i] = c;
    }
}

static uint32_t vit__crc32(const uint32_t *table, const unsigned char *p, size_t n) {
    uint32_t crc = 0xffffffffu;
    size_t i;
    for (i = 0; i < n; i++) crc = table[(crc ^ p[i]) & 255] ^ (crc >> 8);
    return ~crc;
}

/* A PNG: every chunk whole and matching its CRC, IHDR first, IEND last,
   enough IDAT data for the declared size. */
static vit_result vit__png_check(const unsigned char *b, size_t n, vit__img_info *info) {
    size_t i = 8, idat = 0;
    uint32_t w = 0, h = 0, depth = 0, type = 0, ch, crc[256];
    int chunks = 0, first_idat = 1, plte = 0;
    vit__crc_table(crc);
    while (i < n) {
        uint32_t len;
        char t[5];
        const unsigned char *d;
        int k;

        /* the chunk's length, type and CRC */
        if (n - i < 12)
            return vit__fail(VIT_ERR_FORMAT, "image: truncated PNG: the file ends inside the chunk at byte %zu", i);
        len = vit__be32(b + i);
        for (k = 0; k < 4; k++) {
            unsigned char c = b[i + 4 + k];
            if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')))
                return vit__fail(VIT_ERR_FORMAT, "image: corrupt PNG: no chunk type at byte %zu", i + 4);
            t[k] = (char)c;
        }
        t[4] = 0;
        if (len > n - i - 12)
            return vit__fail(
                VIT_ERR_FORMAT,
                "image: truncated PNG: chunk '%s' at byte %zu holds %lu bytes, the file ends %zu bytes later", t, i,
                (unsigned long)len, n - i - 12);
        d = b + i + 8;
        if (vit__crc32(crc, b + i + 4, (size_t)len + 4) != vit__be32(d + len))
            return vit__fail(VIT_ERR_FORMAT, "image: corrupt PNG: chunk '%s' at byte %zu fails its CRC", t, i);

        /* what the chunk says: the header first, at most one palette, the IDAT sizes */
        if (chunks++ == 0) {
            static const unsigned char depths[7] = {1 | 2 | 4 | 8 | 16, 0, 8 | 16, 1 | 2 | 4 | 8, 8 | 16, 0, 8 | 16};
            if (strcmp(t, "IHDR") || len != 13)
                return vit__fail(VIT_ERR_FORMAT, "image: corrupt PNG: the first chunk is not a 13-byte IHDR");
            w = vit__be32(d); h = vit__be32(d + 4); depth = d[8]; type = d[9];
            if (w == 0 || h == 0 || w > (1u << 24) || h > (1u << 24))
                return vit__fail(w && h && w <= INT32_MAX && h <= INT32_MAX ? VIT_ERR_UNSUPPORTED : VIT_ERR_FORMAT,
                                 "image: PNG of %lux%lu pixels; vit.h reads 1 to 16777216 a side", (unsigned long)w,
                                 (unsigned long)h);
            if (type > 6 || depth > 16 || !(depths[type] & depth) || d[10] || d[11] || d[12] > 1)
                return vit__fail(VIT_ERR_FORMAT,
                                 "image: corrupt PNG: IHDR has colour type %u, bit depth %u, methods %u %u %u",
                                 (unsigned)type, (unsigned)depth, d[10], d[11], d[12]);
        } else if (!strcmp(t, "IHDR"))
            return vit__fail(VIT_ERR_FORMAT, "image: corrupt PNG: a second IHDR at byte %zu", i);
        if (!strcmp(t, "PLTE")) {
            if (plte || len % 3 || len == 0 || len > 768)
                return vit__fail(VIT_ERR_FORMAT, "image: corrupt PNG: a second PLTE, or one of %lu bytes",
                                 (unsigned long)len);
            plte = 1;
            if (len < 768) { info->plte_at = i; info->plte_len = len; }
        }
        if (!strcmp(t, "IDAT")) {
            /* stb_image 2.27 offsets a NULL buffer when the first is empty
               (UBSan; found by fuzz/fuzz_image.c) */
            if (first_idat && len == 0)
                return vit__fail(VIT_ERR_UNSUPPORTED,
                                 "image: PNG whose first IDAT chunk is empty (stb_image 2.27 cannot read it safely)");
            first_idat = 0;
            idat += len;
        }
        if (!strcmp(t, "IEND")) break;
        i += (size_t)len + 12;
    }

    /* a whole file: IEND, a palette where needed, and enough IDAT for the pixels */
    if (i >= n) return vit__fail(VIT_ERR_FORMAT, "image: truncated PNG: no IEND chunk");
    if (type == 3 && !plte)
        return vit__fail(VIT_ERR_FORMAT, "image: corrupt PNG: a palette image without a PLTE chunk");
    ch = type == 2 ? 3 : type == 4 ? 2 : type == 6 ? 4 : 1;
    /* The pixel bits, ignoring filter bytes and interlacing (which only add). */
    if ((double)idat * 1032.0 < (double)h * ceil((double)w * ch * depth / 8.0))
        return vit__fail(
            VIT_ERR_FORMAT,
            "image: corrupt PNG: %zu bytes of IDAT data cannot hold %lux%lu pixels (deflate packs at most 1032 "
            "bytes in one)",
            idat, (unsigned long)w, (unsigned long)h);
    if (type != 3) info->plte_at = 0;
    return VIT_OK;
}

/* A JPEG: baseline or progressive, 8-bit, every segment whole, every table
   a scan uses defined before it, every component in a scan that codes its
   DC coefficients, enough coded bytes in each scan, and an end marker. */
static vit_result vit__jpeg_check(const unsigned char *b, size_t n) {
    struct { int id, h, v, tq; } comp[4];
    int nc = 0, prog = 0, hmax = 1, vmax = 1, qdef = 0, hdef = 0, coded = 0, scans = 0, k;
    uint32_t X = 0, Y = 0;
    size_t i = 0;
    while (i < n && b[i] == 0xff) i++; /* fill bytes before SOI, as stb_image allows */
    i++;                               /* SOI */

    /* segment by segment, up to the end-of-image marker */
    for (;;) {
        size_t len, at;
        const unsigned char *s;
        unsigned m;
        if (i >= n) return vit__fail(VIT_ERR_FORMAT, "image: truncated JPEG: no end-of-image marker");
        if (b[i] != 0xff) {
            if (nc) return vit__fail(VIT_ERR_FORMAT, "image: corrupt JPEG: no marker at byte %zu", i);
            i++; /* stray bytes before the frame: skipped, as stb_image and libjpeg do */
            continue;
        }

        /* the marker, then its segment's length, which must fit in the file */
        at = i;
        while (i < n && b[i] == 0xff) i++;
        if (i >= n) return vit__fail(VIT_ERR_FORMAT, "image: truncated JPEG: no end-of-image marker");
        m = b[i++];
        if (m == 0xd9) break;
        if (m == 0x00 || m == 0x01 || (m >= 0xd0 && m <= 0xd8))
            return vit__fail(VIT_ERR_FORMAT, "image: corrupt JPEG: marker 0xFF%02X out of place at byte %zu", m, at);
        if (n - i < 2)
            return vit__fail(VIT_ERR_FORMAT, "image: truncated JPEG: the file ends inside segment 0xFF%02X at byte %zu",
                             m, at);
        len = (size_t)b[i] << 8 | b[i + 1];
        if (len < 2)
            return vit__fail(VIT_ERR_FORMAT, "image: corrupt JPEG: segment 0xFF%02X at byte %zu has length %zu", m, at,
                             len);
        if (len > n - i)
            return vit__fail(
                VIT_ERR_FORMAT,
                "image: truncated JPEG: segment 0xFF%02X at byte %zu holds %zu bytes, the file ends %zu bytes later", m,
                at, len, n - i);
        s = b + i + 2;
        len -= 2;
        i += 2 + len;

        /* what the segment holds: the frame, tables, a restart interval, or a scan and its coded data */
        if (m == 0xc0 || m == 0xc1 || m == 0xc2) { /* SOF: baseline, extended, progressive */
            if (nc) return vit__fail(VIT_ERR_FORMAT, "image: corrupt JPEG: a second frame header at byte %zu", at);
            if (len < 6 || (s[5] != 1 && s[5] != 3 && s[5] != 4) || len != 6 + 3 * (size_t)s[5])
                return vit__fail(VIT_ERR_FORMAT, "image: corrupt JPEG: frame header at byte %zu", at);
            if (s[0] != 8) return vit__fail(VIT_ERR_UNSUPPORTED, "image: %d-bit JPEG; vit.h reads 8-bit JPEG", s[0]);
            Y = (uint32_t)s[1] << 8 | s[2];
            X = (uint32_t)s[3] << 8 | s[4];
            if (!X || !Y)
                return vit__fail(VIT_ERR_UNSUPPORTED,
                                 "image: JPEG of %lux%lu pixels (a height given later is not read)", (unsigned long)X,
                                 (unsigned long)Y);
            prog = m == 0xc2;
            nc = s[5];
            for (k = 0; k < nc; k++) {
                comp[k].id = s[6 + 3 * k];
                comp[k].h = s[7 + 3 * k] >> 4;
                comp[k].v = s[7 + 3 * k] & 15;
                comp[k].tq = s[8 + 3 * k];
                if (comp[k].h < 1 || comp[k].h > 4 || comp[k].v < 1 || comp[k].v > 4 || comp[k].tq > 3)
                    return vit__fail(VIT_ERR_FORMAT, "image: corrupt JPEG: frame header at byte %zu", at);
                if (comp[k].h > hmax) hmax = comp[k].h;
                if (comp[k].v > vmax) vmax = comp[k].v;
            }
        } else if ((m >= 0xc3 && m <= 0xcf) && m != 0xc4 && m != 0xc8 && m != 0xcc) {
            return vit__fail(
                VIT_ERR_UNSUPPORTED,
                "image: JPEG coded with SOF%u (lossless, hierarchical or arithmetic); vit.h reads baseline and "
                "progressive JPEG",
                m - 0xc0);
        } else if (m == 0xc4) { /* DHT: (class and id, 16 counts, symbols) ... */
            size_t p = 0;
            while (p < len) {
                unsigned total = 0;
                if (len - p < 17 || s[p] >> 4 > 1 || (s[p] & 15) > 3)
                    return vit__fail(VIT_ERR_FORMAT, "image: corrupt JPEG: Huffman table segment at byte %zu", at);
                for (k = 1; k <= 16; k++) total += s[p + k];
                /* stb_image 2.27 writes past its size table beyond 256 codes */
                if (total > 256)
                    return vit__fail(VIT_ERR_FORMAT, "image: corrupt JPEG: a Huffman table with %u codes (256 at most)",
                                     total);
                if (len - p - 17 < total)
                    return vit__fail(VIT_ERR_FORMAT, "image: corrupt JPEG: Huffman table segment at byte %zu", at);
                hdef |= 1 << ((s[p] >> 4) * 4 + (s[p] & 15));
                p += 17 + total;
            }
        } else if (m == 0xdb) { /* DQT: (precision and id, 64 values) ... */
            size_t p = 0;
            while (p < len) {
                size_t need = s[p] >> 4 ? 129 : 65;
                if (s[p] >> 4 > 1 || (s[p] & 15) > 3 || len - p < need)
                    return vit__fail(VIT_ERR_FORMAT, "image: corrupt JPEG: quantisation table segment at byte %zu", at);
                qdef |= 1 << (s[p] & 15);
                p += need;
            }
        } else if (m == 0xdd || m == 0xdc) { /* DRI, DNL */
            if (len != 2) return vit__fail(VIT_ERR_FORMAT, "image: corrupt JPEG: segment 0xFF%02X at byte %zu", m, at);
        } else if (m == 0xda) { /* SOS: the scan's header, then its coded data */
            int ns = len ? s[0] : 0, ss, ah, idx[4];
            double blocks = 0.0;
            size_t j;
            if (!nc) return vit__fail(VIT_ERR_FORMAT, "image: corrupt JPEG: a scan before the frame header");
            if (ns < 1 || ns > nc || len != 4 + 2 * (size_t)ns)
                return vit__fail(VIT_ERR_FORMAT, "image: corrupt JPEG: scan header at byte %zu", at);
            ss = s[1 + 2 * ns];
            ah = s[3 + 2 * ns] >> 4;
            scans++;
            for (k = 0; k < ns; k++) {
                int id = s[1 + 2 * k], td = s[2 + 2 * k] >> 4, ta = s[2 + 2 * k] & 15, c;
                for (c = 0; c < nc && comp[c].id != id; c++) {}
                if (c == nc)
                    return vit__fail(VIT_ERR_FORMAT,
                                     "image: corrupt JPEG: scan %d names component %d, which the frame lacks", scans,
                                     id);
                idx[k] = c;
                if (!(qdef & 1 << comp[c].tq))
                    return vit__fail(
                        VIT_ERR_FORMAT,
                        "image: corrupt JPEG: component %d uses quantisation table %d, which no DQT segment defines",
                        id, comp[c].tq);
                if ((!prog || (ss == 0 && ah == 0)) && (td > 3 || !(hdef & 1 << td)))
                    return vit__fail(
                        VIT_ERR_FORMAT,
                        "image: corrupt JPEG: scan %d uses DC Huffman table %d, which no DHT segment defines", scans,
                        td);
                if ((!prog || ss > 0) && (ta > 3 || !(hdef & 1 << (4 + ta))))
                    return vit__fail(
                        VIT_ERR_FORMAT,
                        "image: corrupt JPEG: scan %d uses AC Huffman table %d, which no DHT segment defines", scans,
                        ta);
                /* stb_image zeroes a block's coefficients in its first DC
                   scan; a scan before that reads them uninitialised */
                if (prog && !(ss == 0 && ah == 0) && !(coded & 1 << c))
                    return vit__fail(VIT_ERR_FORMAT,
                                     "image: corrupt JPEG: scan %d comes before the DC scan of component %d", scans,
                                     id);
            }

            /* Blocks whose DC coefficients the scan codes (baseline: all of
               them): at least 2 bits each in a baseline scan, 1 in a
               progressive DC scan. */
            if (!prog || (ss == 0 && ah == 0)) {
                if (ns == 1) {
                    const int c = idx[0];
                    blocks =
                        ceil(ceil((double)X * comp[c].h / hmax) / 8.0) * ceil(ceil((double)Y * comp[c].v / vmax) / 8.0);
                } else {
                    for (k = 0; k < ns; k++) blocks += (double)comp[idx[k]].h * comp[idx[k]].v;
                    blocks *= ceil(X / (8.0 * hmax)) * ceil(Y / (8.0 * vmax));
                }
                for (k = 0; k < ns; k++) coded |= 1 << idx[k];
            }

            /* the coded data must hold at least those bits */
            for (j = i; j < n; j++) /* coded data: up to a marker other than a stuffed 0 or a restart */
                if (b[j] == 0xff && j + 1 < n && b[j + 1] != 0 && (b[j + 1] < 0xd0 || b[j + 1] > 0xd7)) break;
            if (j >= n) return vit__fail(VIT_ERR_FORMAT, "image: truncated JPEG: the file ends inside scan %d", scans);
            if ((double)(j - i) * 8.0 < blocks * (prog ? 1.0 : 2.0))
                return vit__fail(
                    VIT_ERR_FORMAT,
                    "image: corrupt JPEG: scan %d holds %zu bytes, too few for its %.0f blocks of %lux%lu pixels",
                    scans, j - i, blocks, (unsigned long)X, (unsigned long)Y);
            i = j;
        } else if (!((m >= 0xe0 && m <= 0xef) || m == 0xfe)) { /* not APPn or COM */
            return vit__fail(VIT_ERR_FORMAT, "image: corrupt JPEG: unknown marker 0xFF%02X at byte %zu", m, at);
        }
    }

    /* a component that no DC scan codes would be decoded from uninitialised coefficients */
    if (!nc) return vit__fail(VIT_ERR_FORMAT, "image: corrupt JPEG: no frame header");
    for (k = 0; k < nc; k++)
        if (!(coded & 1 << k))
            return vit__fail(VIT_ERR_FORMAT,
                             "image: corrupt JPEG: component %d is in no scan that codes its DC coefficients",
                             comp[k].id);
    return VIT_OK;
}

/* A BMP: a header stb_image reads, the palette, every row of pixels, and
   palette indices inside the palette (stb_image reads its 256-entry
   palette table uninitialised past the file's colours). */
static vit_result vit__bmp_check(const unsigned char *b, size_t n) {
    uint32_t off, hsz, bpp, comp = 0, psize = 0, y, x;
    int64_t w, h;
    uint64_t row, need;
    if (n < 18) return vit__fail(VIT_ERR_FORMAT, "image: truncated BMP: the file ends inside its header");

    /* the header: its size picks the layout of width, height, depth and compression */
    off = vit__le32(b + 10);
    hsz = vit__le32(b + 14);
    if (hsz != 12 && hsz != 40 && hsz != 56 && hsz != 108 && hsz != 124)
        return vit__fail(VIT_ERR_UNSUPPORTED, "image: BMP with a %lu-byte header; vit.h reads 12, 40, 56, 108 and 124",
                         (unsigned long)hsz);
    if (n < 14 + (size_t)hsz) return vit__fail(VIT_ERR_FORMAT, "image: truncated BMP: the file ends inside its header");
    if (hsz == 12) {
        w = vit__le16(b + 18); h = vit__le16(b + 20);
        if (vit__le16(b + 22) != 1) return vit__fail(VIT_ERR_FORMAT, "image: corrupt BMP: planes is not 1");
        bpp = vit__le16(b + 24);
    } else {
        w = (int32_t)vit__le32(b + 18); h = (int32_t)vit__le32(b + 22);
        if (vit__le16(b + 26) != 1) return vit__fail(VIT_ERR_FORMAT, "image: corrupt BMP: planes is not 1");
        bpp = vit__le16(b + 28);
        comp = vit__le32(b + 30);
    }

    /* sizes, depths and codings stb_image reads */
    if (h < 0) h = -h; /* rows stored top-down */
    if (w < 1 || h < 1)
        return vit__fail(VIT_ERR_FORMAT, "image: corrupt BMP: %lldx%lld pixels", (long long)w, (long long)h);
    if (w > (1 << 24) || h > (1 << 24))
        return vit__fail(VIT_ERR_UNSUPPORTED, "image: BMP of %lldx%lld pixels; vit.h reads up to 16777216 a side",
                         (long long)w, (long long)h);
    if (bpp != 1 && bpp != 4 && bpp != 8 && bpp != 16 && bpp != 24 && bpp != 32)
        return vit__fail(VIT_ERR_UNSUPPORTED, "image: BMP with %lu bits per pixel; vit.h reads 1, 4, 8, 16, 24 and 32",
                         (unsigned long)bpp);
    if (comp == 1 || comp == 2)
        return vit__fail(VIT_ERR_UNSUPPORTED, "image: run-length coded BMP; vit.h reads uncompressed BMP");
    if (comp != 0 && !(comp == 3 && (bpp == 16 || bpp == 32)))
        return vit__fail(VIT_ERR_UNSUPPORTED, "image: BMP with compression %lu; vit.h reads uncompressed BMP",
                         (unsigned long)comp);

    /* the palette's size, or pixel data after the header */
    if (bpp < 16) {
        if (hsz == 12)
            return vit__fail(VIT_ERR_UNSUPPORTED,
                             "image: OS/2 1.x BMP with a palette (stb_image 2.27 misreads its palette)");
        psize = off >= 14 + hsz ? (off - 14 - hsz) / 4 : 0; /* as stb_image counts the colours */
        if (psize < 1 || psize > 256)
            return vit__fail(VIT_ERR_FORMAT, "image: corrupt BMP: pixel data at byte %lu leaves room for %lu colours",
                             (unsigned long)off, (unsigned long)psize);
    } else if (off < 14 + hsz) {
        return vit__fail(VIT_ERR_FORMAT, "image: corrupt BMP: pixel data at byte %lu, inside the header",
                         (unsigned long)off);
    }

    /* every row present, and every palette index inside the palette */
    row = ((uint64_t)w * bpp + 31) / 32 * 4;
    need = row * (uint64_t)h;
    if (off > n || need > n - off)
        return vit__fail(VIT_ERR_FORMAT,
                         "image: truncated BMP: %lldx%lld pixels need %llu bytes from byte %lu, the file has %zu",
                         (long long)w, (long long)h, (unsigned long long)need, (unsigned long)off, n);
    if (bpp < 16)
        for (y = 0; y < (uint32_t)h; y++)
            for (x = 0; x < (uint32_t)w; x++) {
                uint32_t bit = x * bpp, v = b[off + y * row + bit / 8];
                v = (v >> (8 - bpp - bit % 8)) & ((1u << bpp) - 1);
                if (v >= psize)
                    return vit__fail(VIT_ERR_FORMAT,
                                     "image: corrupt BMP: pixel (%lu, %lu) is colour %lu of a %lu-colour palette",
                                     (unsigned long)x, (unsigned long)y, (unsigned long)v, (unsigned long)psize);
            }
    return VIT_OK;
}

/* A binary PPM or PGM (P6, P5): the header read the way stb_image 2.27
   reads it (whitespace and # comments, digits up to a delimiter), then
   width * height * channels bytes. Numbers past INT_MAX overflow its
   parser (undefined behaviour; found by fuzz/fuzz_image.c); 16-bit samples
   (max value above 255) it reads in the machine's byte order and
   overruns its buffer converting (found by fuzz/fuzz_image.c). */
static vit_result vit__pnm_check(const unsigned char *b, size_t n, vit__img_info *info) {
    size_t i = 2;
    unsigned char c = n > 2 ? b[i++] : 0;
    long v[3];
    int k;
    for (k = 0; k < 3; k++) { /* width, height, max value */
        int digits = 0;
        for (;;) {
            while (i < n && (c == ' ' || (c >= '\t' && c <= '\r'))) c = b[i++];
            if (i >= n || c != '#') break;
            while (i < n && c != '\n' && c != '\r') c = b[i++];
        }
        for (v[k] = 0; c >= '0' && c <= '9'; digits++) {
            if (v[k] > (INT_MAX - (c - '0')) / 10)
                return vit__fail(VIT_ERR_FORMAT, "image: corrupt PNM: a header number beyond %d", INT_MAX);
            v[k] = v[k] * 10 + (c - '0');
            if (i >= n) return vit__fail(VIT_ERR_FORMAT, "image: truncated PNM: the file ends inside its header");
            c = b[i++];
        }
        if (!digits)
            return vit__fail(VIT_ERR_FORMAT, "image: %s PNM: no %s in the header", i >= n ? "truncated" : "corrupt",
                             k == 0   ? "width"
                             : k == 1 ? "height"
                                      : "max value");
    }

    /* sizes and depths that stb_image reads correctly */
    if (v[2] > 255 && v[2] <= 65535)
        return vit__fail(VIT_ERR_UNSUPPORTED,
                         "image: 16-bit PNM (max value above 255) is not supported (stb_image 2.27 misreads it)");
    if (v[0] < 1 || v[1] < 1 || v[2] < 1 || v[2] > 65535)
        return vit__fail(VIT_ERR_FORMAT, "image: corrupt PNM: %ldx%ld pixels, max value %ld", v[0], v[1], v[2]);
    if (v[0] > (1 << 24) || v[1] > (1 << 24))
        return vit__fail(VIT_ERR_UNSUPPORTED, "image: PNM of %ldx%ld pixels; vit.h reads up to 16777216 a side", v[0],
                         v[1]);

    info->pnm_max = (int32_t)v[2];
    info->pnm_channels = b[1] == '6' ? 3 : 1;
    /* i is past the one delimiter after the max value: the samples start there. */
    if ((double)v[0] * v[1] * info->pnm_channels > (double)(n - i))
        return vit__fail(VIT_ERR_FORMAT,
                         "image: truncated %s: %ldx%ld pixels need %.0f bytes, the file holds %zu after its header",
                         b[1] == '6' ? "PPM" : "PGM", v[0], v[1], (double)v[0] * v[1] * info->pnm_channels, n - i);
    return VIT_OK;
}

/* Which format b holds, then that format's check. */
static vit_result vit__image_check(const unsigned char *b, size_t n, vit__img_info *info) {
    static const unsigned char png[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    size_t i = 0;
    memset(info, 0, sizeof *info);
    while (i < n && b[i] == 0xff) i++;
    if (n >= 8 && !memcmp(b, png, 8)) { info->format = "PNG"; return vit__png_check(b, n, info); }
    if (i > 0 && i < n && b[i] == 0xd8) { info->format = "JPEG"; return vit__jpeg_check(b, n); }
    if (n >= 2 && b[0] == 'B' && b[1] == 'M') { info->format = "BMP"; return vit__bmp_check(b, n); }
    if (n >= 2 && b[0] == 'P' && (b[1] == '5' || b[1] == '6')) {
        info->format = "PNM";
        return vit__pnm_check(b, n, info);
    }
    if (n >= 4 && !memcmp(b, "GIF8", 4))
        return vit__fail(VIT_ERR_UNSUPPORTED,
                         "image: a GIF; vit.h reads PNG, JPEG, BMP and binary PPM/PGM (convert it first)");
    return vit__fail(VIT_ERR_FORMAT, "image: not a PNG, JPEG, BMP or binary PPM/PGM file, the formats vit.h reads");
}

/* A copy of the PNG b (n bytes) whose short PLTE is extended to 256 colours
   as PIL extends it, colour k being grey (k, k, k): stb_image 2.27 reads
   its palette table uninitialised past the file's colours. In `buf`, made
   here. */
static vit_result vit__png_full_palette(const unsigned char *b, size_t n, const vit__img_info *info, vit_arena *buf) {
    size_t at = info->plte_at, rest = at + 12 + info->plte_len, k;
    uint32_t crc[256];
    unsigned char *p;
    vit_result r;
    if ((r = vit_arena_init_alloc(buf, n - info->plte_len + 768)) != VIT_OK) return r;
    p = buf->base;
    memcpy(p, b, at);
    p += at;
    memcpy(p, "\0\0\x03\0PLTE", 8);
    memcpy(p + 8, b + at + 8, info->plte_len);
    for (k = info->plte_len; k < 768; k++) p[8 + k] = (unsigned char)(k / 3);
    vit__crc_table(crc);
    k = vit__crc32(crc, p + 4, 772);
    p[776] = (unsigned char)(k >> 24);
    p[777] = (unsigned char)(k >> 16);
    p[778] = (unsigned char)(k >> 8);
    p[779] = (unsigned char)k;
    memcpy(p + 780, b + rest, n - rest);
    return VIT_OK;
}

VITDEF vit_result vit_image_load_memory(vit_arena *a, const void *data, size_t size, int32_t channels,
                                        vit_tensor *img) {
    const unsigned char *src = (const unsigned char *)data;
    int w, h, n, c, i, sc;
    unsigned char *px;
    vit__img_info info;
    vit_arena copy;
    vit_tensor t;
    vit_result r;
    if (!a || !data || !img) return vit__fail(VIT_ERR_ARG, "image: NULL argument");
    if (channels != 1 && channels != 3)
        return vit__fail(VIT_ERR_ARG, "image: %d channels asked for; an image loads as 1 (grey) or 3 (RGB)",
                         (int)channels);
    if (size > INT_MAX)
        return vit__fail(VIT_ERR_UNSUPPORTED, "image: %zu bytes is more than the %d vit.h decodes", size, INT_MAX);

    /* the file's structure checked before stb_image sees it; a short palette padded to 256 entries */
    if ((r = vit__image_check(src, size, &info)) != VIT_OK) return r;
    memset(&copy, 0, sizeof copy);
    if (info.plte_at) {
        if ((r = vit__png_full_palette(src, size, &info, &copy)) != VIT_OK) return r;
        size += 768 - info.plte_len;
        src = copy.base;
    }

    /* A PNM with a max value below 255 is scaled as PIL scales it, from
       its own channels; stb_image converts the rest. */
    sc = info.pnm_max && info.pnm_max < 255 ? 0 : channels;
    px = stbi_load_from_memory(src, (int)size, &w, &h, &n, sc);
    vit_arena_free(&copy);
    if (!px) return vit__fail(VIT_ERR_FORMAT, "image: cannot decode the %s (%s)", info.format, stbi_failure_reason());
    if (!sc) {
        sc = n;
        for (i = 0; i < w * h * n; i++)
            px[i] = px[i] >= info.pnm_max ? 255 : (unsigned char)rint((double)px[i] / info.pnm_max * 255.0);
    }

    /* the (C, H, W) tensor in [0, 1] */
    if ((r = vit__tensor4(a, &t, 3, channels, h, w, 1)) != VIT_OK) {
        stbi_image_free(px);
        return r;
    }
    if (!vit_arena_counting(a))
        for (c = 0; c < channels; c++)
            for (i = 0; i < w * h; i++) {
                const unsigned char *p = px + (size_t)i * sc;
                /* grey from RGB with stb_image's weights, as for other formats */
                int v = sc == channels ? p[c] : sc == 1 ? p[0] : (p[0] * 77 + p[1] * 150 + p[2] * 29) >> 8;
                t.data[(size_t)c * w * h + i] = v / 255.0f;
            }
    stbi_image_free(px);
    *img = t;
    return VIT_OK;
}

#ifndef VIT_NO_STDIO
VITDEF vit_result vit_image_load(vit_arena *a, const char *path, int32_t channels, vit_tensor *img) {
    vit_arena tmp;
    vit_result r;
    size_t len;
    if (!a || !path || !img) return vit__fail(VIT_ERR_ARG, "image: NULL argument");
    if (channels != 1 && channels != 3)
        return vit__fail(VIT_ERR_ARG, "image: %d channels asked for; an image loads as 1 (grey) or 3 (RGB)",
                         (int)channels);
    if ((r = vit__read_file(path, INT_MAX, &tmp, &len)) != VIT_OK) return r;
    r = vit_image_load_memory(a, tmp.base, len, channels, img);
    vit_arena_free(&tmp);
    return vit__in_file(path, r);
}
#endif
#endif /* VIT_NO_IMAGE */

/* The in-pixels [lo, hi) that output sample o of an axis resized from `in`
   to `out` reads: the filter's support (1 for the triangle, 2 for the
   cubic), stretched by the downscale factor, as PIL's ImagingResample
   computes it. */
static void vit__aa_window(int32_t in, int32_t out, int32_t o, int cubic, int32_t *lo, int32_t *hi) {
    double scale = (double)in / out, support = (scale > 1.0 ? scale : 1.0) * (cubic ? 2.0 : 1.0),
           center = (o + 0.5) * scale;
    int32_t kmax = (int32_t)ceil(support) * 2 + 1;
    *lo = (int32_t)(center - support + 0.5);
    *hi = (int32_t)(center + support + 0.5);
    if (*lo < 0) *lo = 0;
    if (*hi > in) *hi = in;
    if (*hi - *lo > kmax) *hi = *lo + kmax;
}

/* PIL's filters at distance t (in output pixels): the triangle, or Keys'
   cubic with a = -0.5. */
static double vit__aa_filter(double t, int cubic) {
    t = fabs(t);
    if (cubic) return vit__keys(t, -0.5);
    return t < 1.0 ? 1.0 - t : 0.0;
}

/* Antialiased bilinear or bicubic weights for output samples [o0, o0 + n)
   of an axis resized from `in` to `out`, as PIL's ImagingResample and
   torch's antialias=True compute them. Sample o reads in-pixels first[o]
   .. first[o]+count[o]-1. */
static int32_t vit__aa_coeffs(vit_arena *a, int32_t in, int32_t out, int32_t o0, int32_t n, int cubic, int32_t **first,
                              int32_t **count, float **w) {
    double scale = (double)in / out, fs = scale > 1.0 ? scale : 1.0;
    int32_t kmax = (int32_t)ceil(fs * (cubic ? 2.0 : 1.0)) * 2 + 1, o, x;
    size_t wn;
    if (!vit__mul_ok((size_t)n, (size_t)kmax, &wn) || !vit__mul_ok(wn, sizeof(float), &wn)) {
        vit__fail(VIT_ERR_OOM, "preprocess: resize from %d to %d needs too many filter taps", (int)in, (int)out);
        return 0;
    }
    *first = (int32_t *)vit_arena_alloc(a, (size_t)n * sizeof(int32_t));
    *count = (int32_t *)vit_arena_alloc(a, (size_t)n * sizeof(int32_t));
    *w = (float *)vit_arena_alloc(a, wn);
    if (!*first || !*count || !*w) return 0;
    if (vit_arena_counting(a)) return kmax;
    for (o = 0; o < n; o++) {
        double center = (o0 + o + 0.5) * scale, total = 0.0;
        int32_t lo, hi;
        float *wo = *w + (size_t)o * kmax;
        vit__aa_window(in, out, o0 + o, cubic, &lo, &hi);
        /* The taps sum in double, as PIL's do; only the normalised weight
           is rounded to float. */
        for (x = 0; x < hi - lo; x++) total += vit__aa_filter((x + lo - center + 0.5) / fs, cubic);
        for (x = 0; x < hi - lo; x++)
            wo[x] = (float)(total != 0.0 ? vit__aa_filter((x + lo - center + 0.5) / fs, cubic) / total : 0.0);
        (*first)[o] = lo;
        (*count)[o] = hi - lo;
    }
    return kmax;
}

#define VIT__MAX_SIDE (1 << 24) /* the longest side an image resizes to, as stb_image's largest */

static int32_t vit__round_half_even(int32_t twice) { /* round(twice / 2.0) as Python does */
    int32_t h = twice / 2;
    return twice % 2 == 0 || h % 2 == 0 ? h : h + 1;
}

VITDEF vit_result vit_image_preprocess(vit_arena *a, const vit_tensor *img, const vit_preprocess *p, vit_tensor *out) {
    static const float imagenet_mean[3] = {0.485f, 0.456f, 0.406f}, imagenet_std[3] = {0.229f, 0.224f, 0.225f};
    int32_t C, H, W, rs, cs, nh, nw, top, left, c, y, x, k, kx, ky, y0, y1, th;
    int cubic;
    int32_t *fx, *cx, *fy, *cy;
    float *wx, *wy, mean[3], stdv[3];
    double long_side;
    int std_given, mean_given;
    vit_tensor o, tmp;
    vit_result r;
    size_t mark;
    char s[64];

    /* the image (C, H, W), then the options, defaults filled in */
    if (!a || !img || !img->data || !out) return vit__fail(VIT_ERR_ARG, "preprocess: NULL argument");
    if (img->ndim != 3 || img->shape[0] < 1 || img->shape[0] > 3 || img->shape[1] < 1 || img->shape[2] < 1)
        return vit__fail(VIT_ERR_SHAPE, "preprocess: image has shape %s, expected (C, H, W) with C = 1, 2 or 3",
                         vit_tensor_shape_str(img, s, sizeof s));
    C = img->shape[0]; H = img->shape[1]; W = img->shape[2];
    rs = p && p->resize ? p->resize : 256;
    cs = p && p->crop ? p->crop : 224;

    /* std all 0: ImageNet's; mean all 0: ImageNet's too when std is, else
       kept (mean 0, std 1 stays in pixel units); a mean given with std all
       0 keeps the given mean. */
    std_given = p && (p->std[0] != 0.0f || p->std[1] != 0.0f || p->std[2] != 0.0f);
    mean_given = p && (p->mean[0] != 0.0f || p->mean[1] != 0.0f || p->mean[2] != 0.0f);
    for (c = 0; c < 3; c++) {
        mean[c] = mean_given || std_given ? p->mean[c] : imagenet_mean[c];
        stdv[c] = std_given ? p->std[c] : imagenet_std[c];
        if (!(stdv[c] > 0.0f) && c < C) return vit__fail(VIT_ERR_ARG, "preprocess: std[%d] is not positive", c);
        if (!(mean[c] - mean[c] == 0.0f) && c < C)
            return vit__fail(VIT_ERR_ARG, "preprocess: mean[%d] is not finite", c);
    }

    if (rs < 1 || cs < 1 || cs > rs)
        return vit__fail(VIT_ERR_ARG, "preprocess: crop %d must be in 1..resize %d", (int)cs, (int)rs);
    if (p && ((unsigned)p->resample > VIT_RESAMPLE_BICUBIC || (unsigned)p->squash > 1 || (unsigned)p->crop_floor > 1))
        return vit__fail(VIT_ERR_ARG, "preprocess: resample %d, squash %d, crop_floor %d: each 0 or 1",
                         (int)p->resample, (int)p->squash, (int)p->crop_floor);
    if (rs > VIT__MAX_SIDE)
        return vit__fail(VIT_ERR_ARG, "preprocess: resize %d is beyond %d, the longest side vit.h resizes to", (int)rs,
                         VIT__MAX_SIDE);

    /* the resized size, then the crop's offset in it */
    /* torchvision: the short side becomes rs, the long side int(rs * long
       / short); squash: both become rs */
    long_side = p && p->squash ? (double)rs : (double)rs * (H <= W ? W : H) / (H <= W ? H : W);
    if (long_side >= VIT__MAX_SIDE + 1.0)
        return vit__fail(
            VIT_ERR_SHAPE,
            "preprocess: a %dx%d image resized to a short side of %d would be %.0f pixels long; vit.h resizes to at "
            "most %d a side",
            (int)W, (int)H, (int)rs, floor(long_side), VIT__MAX_SIDE);
    if (p && p->squash) nh = nw = rs;
    else if (H <= W) { nh = rs; nw = (int32_t)long_side; }
    else { nw = rs; nh = (int32_t)long_side; }
    if (nw < cs || nh < cs)
        return vit__fail(VIT_ERR_SHAPE, "preprocess: %dx%d image resizes to %dx%d, smaller than the %d crop", (int)W,
                         (int)H, (int)nw, (int)nh, (int)cs);
    top = p && p->crop_floor ? (nh - cs) / 2 : vit__round_half_even(nh - cs);
    left = p && p->crop_floor ? (nw - cs) / 2 : vit__round_half_even(nw - cs);

    /* o stays; the resampling tables and the column pass are scratch */
    if ((r = vit__tensor4(a, &o, 4, 1, C, cs, cs)) != VIT_OK) return r;
    mark = vit_arena_mark(a);
    /* Only the cropped window is computed: columns first, on the in-rows
       [y0, y1) that the crop's rows read (th rows x crop), then rows. */
    cubic = p && p->resample == VIT_RESAMPLE_BICUBIC;
    vit__aa_window(H, nh, top, cubic, &y0, &y1);             /* windows move down monotonically */
    vit__aa_window(H, nh, top + cs - 1, cubic, &th, &y1);
    th = y1 - y0;
    kx = vit__aa_coeffs(a, W, nw, left, cs, cubic, &fx, &cx, &wx);
    ky = vit__aa_coeffs(a, H, nh, top, cs, cubic, &fy, &cy, &wy);
    if (!kx || !ky || (r = vit__tensor4(a, &tmp, 3, C, th, cs, 1)) != VIT_OK) {
        vit_arena_rewind(a, mark);
        return VIT_ERR_OOM;
    }

    /* columns, then rows, then the normalisation */
    if (!vit_arena_counting(a)) {
        for (c = 0; c < C; c++)
            for (y = 0; y < th; y++)
                for (x = 0; x < cs; x++) {
                    const float *src = img->data + ((size_t)c * H + y0 + y) * W + fx[x];
                    float acc = 0.0f;
                    for (k = 0; k < cx[x]; k++) acc += wx[(size_t)x * kx + k] * src[k];
                    /* PIL clips each pass to the pixel range; the cubic overshoots it */
                    tmp.data[((size_t)c * th + y) * cs + x] = cubic ? (acc < 0.0f   ? 0.0f
                                                                       : acc > 1.0f ? 1.0f
                                                                                    : acc)
                                                                    : acc;
                }

        for (c = 0; c < C; c++)
            for (y = 0; y < cs; y++)
                for (x = 0; x < cs; x++) {
                    float acc = 0.0f;
                    for (k = 0; k < cy[y]; k++)
                        acc += wy[(size_t)y * ky + k] * tmp.data[((size_t)c * th + fy[y] - y0 + k) * cs + x];
                    if (cubic) acc = acc < 0.0f ? 0.0f : acc > 1.0f ? 1.0f : acc;
                    o.data[((size_t)c * cs + y) * cs + x] = (acc - mean[c]) / stdv[c];
                }
    }

    vit_arena_rewind(a, mark);
    *out = o;
    return VIT_OK;
}

/* One or up to `max` comma-separated numbers: the count, or 0 when the
   text is anything else. */
static int32_t vit__floats(const char *s, float *v, int32_t max) {
    int32_t n = 0;
    while (s && n < max) {
        char *end;
        double d = strtod(s, &end);
        if (end == s || !isfinite(d) || fabs(d) > 1e30) return 0;
        v[n++] = (float)d;
        while (*end == ' ') end++;
        if (!*end) return n;
        if (*end != ',') return 0;
        s = end + 1;
    }
    return 0;
}

VITDEF vit_result vit_model_preprocess(const vit_model *m, vit_preprocess *p) {
    static const float imagenet_mean[3] = {0.485f, 0.456f, 0.406f}, imagenet_std[3] = {0.229f, 0.224f, 0.225f};
    const char *mean, *std, *s;
    float v[3];
    int32_t C, n, c;

    /* a ViT, and ImageNet's statistics unless the file gives its own */
    if (!m || !p) return vit__fail(VIT_ERR_ARG, "vit_model_preprocess: NULL argument");
    memset(p, 0, sizeof *p);
    if (m->kind != VIT_KIND_VIT)
        return vit__fail(VIT_ERR_ARG, "vit_model_preprocess: a %s model does not take images", vit_kind_name(m->kind));
    C = m->cfg.in_channels;
    mean = vit_model_meta(m, "input_mean");
    std = vit_model_meta(m, "input_std");
    memcpy(p->mean, imagenet_mean, sizeof p->mean);
    memcpy(p->std, imagenet_std, sizeof p->std);
    /* one without the other is a file half written: ImageNet's other half would be a guess */
    if (!mean != !std)
        return vit__fail(VIT_ERR_FORMAT, "metadata has %s without %s", mean ? "input_mean" : "input_std",
                         mean ? "input_std" : "input_mean");
    for (c = 0; c < 2; c++) {
        const char *t = c ? std : mean;
        float *dst = c ? p->std : p->mean;
        int32_t k;
        if (!t) continue;
        n = vit__floats(t, v, 3);
        if (n != 1 && n != C)
            return vit__fail(VIT_ERR_FORMAT, "metadata %s '%s' is not 1 or %d numbers", c ? "input_std" : "input_mean",
                             t, (int)C);
        for (k = 0; k < 3; k++) dst[k] = v[n == 1 ? 0 : k < n ? k : 0];
        if (c)
            for (k = 0; k < n; k++)
                if (!(v[k] > 0.0f))
                    return vit__fail(VIT_ERR_FORMAT, "metadata input_std '%s' has a value that is not positive", t);
    }

    /* the crop, then the resize it is cut from: given, from timm's crop_pct, or 256/224 of it */
    p->crop = m->cfg.image_size;
    if ((s = vit_model_meta(m, "input_crop"))) {
        if (vit__floats(s, v, 1) != 1 || v[0] < 1.0f || v[0] > 65536.0f || v[0] != floorf(v[0]))
            return vit__fail(VIT_ERR_FORMAT, "metadata input_crop '%s' is not a size in 1..65536", s);
        p->crop = (int32_t)v[0];
    }
    if ((s = vit_model_meta(m, "input_resize"))) {
        n = vit__floats(s, v, 2);
        if (n == 2 && v[0] != v[1])
            return vit__fail(VIT_ERR_UNSUPPORTED,
                             "metadata input_resize '%s': vit_image_preprocess resizes to squares only", s);
        if (n < 1 || v[0] < 1.0f || v[0] > 65536.0f || v[0] != floorf(v[0]))
            return vit__fail(VIT_ERR_FORMAT, "metadata input_resize '%s' is not a size in 1..65536", s);
        p->resize = (int32_t)v[0];
    } else if ((s = vit_model_meta(m, "input_crop_pct"))) {
        /* timm: math.floor(img_size / crop_pct), in double as Python's */
        double d;
        if (vit__floats(s, v, 1) != 1 || !(v[0] >= 0.0625f && v[0] <= 1.0f))
            return vit__fail(VIT_ERR_FORMAT, "metadata input_crop_pct '%s' is not a number in [0.0625, 1]", s);
        d = strtod(s, NULL);
        p->resize = (int32_t)floor(p->crop / d);
    } else p->resize = mean ? p->crop : (int32_t)((int64_t)p->crop * 256 / 224);
    if (p->resize < p->crop)
        return vit__fail(VIT_ERR_FORMAT, "metadata input_resize %d is smaller than the crop %d", (int)p->resize,
                         (int)p->crop);

    /* resampling, crop mode and crop offset, each only when the file says */
    if ((s = vit_model_meta(m, "input_interpolation"))) {
        if (!strcmp(s, "bicubic")) p->resample = VIT_RESAMPLE_BICUBIC;
        else if (strcmp(s, "bilinear"))
            return vit__fail(VIT_ERR_UNSUPPORTED,
                             "metadata input_interpolation '%s': vit_image_preprocess has bilinear and bicubic", s);
    }
    if ((s = vit_model_meta(m, "input_crop_mode"))) {
        if (!strcmp(s, "squash")) p->squash = 1;
        else if (strcmp(s, "center"))
            return vit__fail(VIT_ERR_UNSUPPORTED,
                             "metadata input_crop_mode '%s': vit_image_preprocess has center and squash", s);
    }
    if ((s = vit_model_meta(m, "input_crop_offset"))) {
        if (!strcmp(s, "floor")) p->crop_floor = 1;
        else if (strcmp(s, "round"))
            return vit__fail(VIT_ERR_FORMAT, "metadata input_crop_offset '%s' is not round or floor", s);
    }
    return VIT_OK;
}

/* ---- I/O: PNG ---- */

/* Viridis (matplotlib's, CC0) sampled every 16th of its 256 entries. */
static const unsigned char vit__viridis[17][3] = {
    {68, 1, 84},    {72, 24, 106},  {71, 45, 123},  {66, 64, 134},  {59, 82, 139},  {51, 99, 141},
    {44, 114, 142}, {38, 130, 142}, {33, 145, 140}, {31, 160, 136}, {40, 174, 128}, {63, 188, 115},
    {94, 201, 98},  {132, 212, 75}, {173, 220, 48}, {216, 226, 25}, {253, 231, 37}};

VITDEF void vit_colormap(float v, unsigned char rgb[3]) {
    float f;
    int i, c;
    if (!(v > 0.0f)) v = 0.0f; /* NaN too */
    if (v > 1.0f) v = 1.0f;
    f = v * 16.0f;
    i = (int)f;
    if (i > 15) i = 15;
    f -= (float)i;
    for (c = 0; c < 3; c++)
        rgb[c] = (unsigned char)(vit__viridis[i][c] + f * (vit__viridis[i + 1][c] - vit__viridis[i][c]) + 0.5f);
}

#if !defined(VIT_NO_STDIO) && !defined(VIT_NO_PNG)
#if !defined(INCLUDE_STB_IMAGE_WRITE_H)
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STBIW_MALLOC(sz) VIT_MALLOC(sz)
#define STBIW_FREE(p) VIT_FREE(p)
#define STBIW_REALLOC_SIZED(p, old, sz) vit__realloc_sized(p, old, sz)
#define STBIW_ASSERT(x) VIT_ASSERT(x)
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#endif
#ifdef VIT_STB_FLAT
#include "stb_image_write.h"
#else
#include <stb/stb_image_write.h>
#endif
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

/* Bilinear sample of src (h, w) at pixel-centre coordinates (align_corners
   False), clamped at the borders. */
static float vit__bilinear(const float *src, int32_t h, int32_t w, float y, float x) {
    int32_t y0, x0, y1, x1;
    float fy, fx;
    y = y < 0.0f ? 0.0f : y > (float)(h - 1) ? (float)(h - 1) : y;
    x = x < 0.0f ? 0.0f : x > (float)(w - 1) ? (float)(w - 1) : x;
    y0 = (int32_t)y; x0 = (int32_t)x;
    y1 = y0 + 1 < h ? y0 + 1 : y0; x1 = x0 + 1 < w ? x0 + 1 : x0;
    fy = y - (float)y0; fx = x - (float)x0;
    return (1 - fy) * ((1 - fx) * src[(size_t)y0 * w + x0] + fx * src[(size_t)y0 * w + x1]) +
           fy * ((1 - fx) * src[(size_t)y1 * w + x0] + fx * src[(size_t)y1 * w + x1]);
}

/* One cell: map (gh, gw) min-max normalised and upsampled to (ch, cw),
   blended over image (or alone), written into rgb rows of `stride` bytes. */
static void vit__paint(unsigned char *rgb, size_t stride, int32_t ch, int32_t cw, const vit_tensor *image,
                       const float *map, int32_t gh, int32_t gw, float alpha) {
    float lo = map[0], hi = map[0];
    int32_t i, y, x, c;
    for (i = 1; i < gh * gw; i++) {
        lo = map[i] < lo ? map[i] : lo;
        hi = map[i] > hi ? map[i] : hi;
    }
    for (y = 0; y < ch; y++)
        for (x = 0; x < cw; x++) {
            float v = vit__bilinear(map, gh, gw, (y + 0.5f) * gh / ch - 0.5f, (x + 0.5f) * gw / cw - 0.5f);
            unsigned char col[3], *px = rgb + (size_t)y * stride + (size_t)x * 3;
            vit_colormap(hi > lo ? (v - lo) / (hi - lo) : 0.0f, col);
            for (c = 0; c < 3; c++) {
                float out = col[c];
                if (image) {
                    int32_t C = image->shape[0], H = image->shape[1], W = image->shape[2];
                    float iv = vit__bilinear(image->data + (size_t)(C == 3 ? c : 0) * H * W, H, W,
                                             (y + 0.5f) * H / ch - 0.5f, (x + 0.5f) * W / cw - 0.5f);
                    iv = iv < 0.0f ? 0.0f : iv > 1.0f ? 1.0f : iv;
                    out = (1.0f - alpha) * iv * 255.0f + alpha * col[c];
                }
                px[c] = (unsigned char)(out + 0.5f);
            }
        }
}

static vit_result vit__check_image(const vit_tensor *image, const char *who) {
    char s[64];
    if (image && (!image->data || image->ndim != 3 || (image->shape[0] != 1 && image->shape[0] != 3)))
        return vit__fail(VIT_ERR_SHAPE, "%s: image has shape %s, expected (1 or 3, H, W)", who,
                         image->data ? vit_tensor_shape_str(image, s, sizeof s) : "NULL");
    return VIT_OK;
}

/* stb_image_write hands the encoded PNG to this sink, which saves it. */
typedef struct vit__png_out { const char *path; vit_result r; } vit__png_out;
static void vit__png_sink(void *ctx, void *data, int size) {
    vit__png_out *o = (vit__png_out *)ctx;
    const void *part = data;
    size_t len = (size_t)size;
    o->r = vit__save(o->path, 1, &part, &len);
}

static vit_result vit__write_png(const char *path, const unsigned char *rgb, int32_t w, int32_t h) {
    vit__png_out o;
    o.path = path;
    o.r = vit__fail(VIT_ERR_OOM, "%s: cannot encode a %dx%d PNG (out of memory)", path, (int)w, (int)h);
    stbi_write_png_to_func(vit__png_sink, &o, w, h, 3, rgb, w * 3);
    return o.r;
}

VITDEF vit_result vit_png_grid(const char *path, const vit_tensor *image, const float *maps, int32_t n, int32_t gh,
                               int32_t gw, int32_t cols, int32_t cell, float alpha) {
    int32_t rows, W, H, i;
    size_t bytes;
    vit_arena buf;
    vit_result r;
    if (!path || !maps || n < 1 || gh < 1 || gw < 1 || cols < 1 || cell < 1 || cell > 4096 ||
        !(alpha >= 0.0f && alpha <= 1.0f))
        return vit__fail(VIT_ERR_ARG, "vit_png_grid: bad argument");
    if ((r = vit__check_image(image, "vit_png_grid")) != VIT_OK) return r;
    if (cols > n) cols = n;
    rows = (n + cols - 1) / cols;
    W = cols * cell + (cols - 1) * 2;
    H = rows * cell + (rows - 1) * 2;
    if ((double)W * H * 3 > (double)INT_MAX)
        return vit__fail(VIT_ERR_OVERFLOW, "vit_png_grid: %dx%d pixels is too large", (int)W, (int)H);
    bytes = (size_t)W * H * 3;
    if ((r = vit_arena_init_alloc(&buf, bytes)) != VIT_OK) return r;
    memset(buf.base, 255, bytes);
    for (i = 0; i < n; i++)
        vit__paint(buf.base + (size_t)(i / cols) * (cell + 2) * W * 3 + (size_t)(i % cols) * (cell + 2) * 3,
                   (size_t)W * 3, cell, cell, image, maps + (size_t)i * gh * gw, gh, gw, alpha);
    r = vit__write_png(path, buf.base, W, H);
    vit_arena_free(&buf);
    return r;
}

VITDEF vit_result vit_png_overlay(const char *path, const vit_tensor *image, const float *map, int32_t gh, int32_t gw,
                                  float alpha) {
    vit_arena buf;
    vit_result r;
    int32_t H, W;
    if (!path || !image || !map || gh < 1 || gw < 1 || !(alpha >= 0.0f && alpha <= 1.0f))
        return vit__fail(VIT_ERR_ARG, "vit_png_overlay: bad argument");
    if ((r = vit__check_image(image, "vit_png_overlay")) != VIT_OK) return r;
    H = image->shape[1]; W = image->shape[2];
    if ((r = vit_arena_init_alloc(&buf, (size_t)W * H * 3)) != VIT_OK) return r;
    vit__paint(buf.base, (size_t)W * 3, H, W, image, map, gh, gw, alpha);
    r = vit__write_png(path, buf.base, W, H);
    vit_arena_free(&buf);
    return r;
}

VITDEF vit_result vit_png_heatmap(const char *path, const float *map, int32_t gh, int32_t gw, int32_t scale) {
    vit_arena buf;
    vit_result r;
    if (!path || !map || gh < 1 || gw < 1 || scale < 1 || (double)gh * gw * scale * scale > 1e8)
        return vit__fail(VIT_ERR_ARG, "vit_png_heatmap: bad argument");
    if ((r = vit_arena_init_alloc(&buf, (size_t)gh * gw * scale * scale * 3)) != VIT_OK) return r;
    vit__paint(buf.base, (size_t)gw * scale * 3, gh * scale, gw * scale, NULL, map, gh, gw, 1.0f);
    r = vit__write_png(path, buf.base, gw * scale, gh * scale);
    vit_arena_free(&buf);
    return r;
}

VITDEF vit_result vit_png_image(const char *path, const vit_tensor *image) {
    vit_arena buf;
    vit_result r;
    int32_t H, W, C, i, c;
    if (!path || !image) return vit__fail(VIT_ERR_ARG, "vit_png_image: NULL argument");
    if ((r = vit__check_image(image, "vit_png_image")) != VIT_OK) return r;
    C = image->shape[0]; H = image->shape[1]; W = image->shape[2];
    if ((r = vit_arena_init_alloc(&buf, (size_t)W * H * 3)) != VIT_OK) return r;
    for (i = 0; i < H * W; i++)
        for (c = 0; c < 3; c++) {
            float v = image->data[(size_t)(C == 3 ? c : 0) * H * W + i];
            buf.base[(size_t)i * 3 + c] = (unsigned char)((v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v) * 255.0f + 0.5f);
        }
    r = vit__write_png(path, buf.base, W, H);
    vit_arena_free(&buf);
    return r;
}
#endif

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop /* the including file's warning settings again */
#endif
#endif /* VIT_IMPLEMENTATION_INCLUDED */
#endif /* VIT_IMPLEMENTATION */

/*
   REVISION HISTORY
     0.5.34 (2026-11-30) I8's attention (P V in int8) reduces its rows'
                         maxima and sums a group at a time and takes
                         V's column maxima a row at a time: ViT-B/16 I8
                         at B = 8 0.5-1% faster (the same bits).
     0.5.33 (2026-11-30) I8's attention takes P V in int8 where
                         vpdpbusd and vdpbf16ps run (e = exp(s -
                         max) as u8, V a column on its own scale):
                         DINOv2-S/14 I8 at 518 px 1.09-1.12x faster
                         (I8 outputs change; their error to f32 the
                         same on ViT-B/16). A LayerNorm product's x
                         converted two rows at a time (the same
                         bits; BF16 at B = 8 1.4% faster).
     0.5.32 (2026-11-30) A stretch on one thread after the system took
                         a core starts short (32 products) and
                         doubles while the core stays taken: a burst
                         of another program's threads costs half a
                         pass on one thread, not four (the same bits).
     0.5.31 (2026-11-30) AVX2's F32 panels packed at load run blocks
                         of 1,024 k from y's sums, as BF16's do
                         (ViT-B/16's K = 768 in one tile call): F32
                         passes 2-4% faster on a Zen 3 (F32's bits
                         on AVX2 change, packed == row-major still).
     0.5.30 (2026-11-30) BF16 on AVX2 packs x for the widening tile as
                         it rounds it (one stream to broadcast from;
                         every product, the LayerNorms inside), and
                         the pack normalises as it goes (no rows
                         written out, no width limit); its panels
                         packed at load run in blocks of 1,024 k,
                         later blocks starting from y's sums (BF16's
                         bits on AVX2 change, within its bounds).
                         Whole BF16 passes 5-9% faster on a Zen 3.
     0.5.29 (2026-11-29) The f32 attention's q kᵀ on a tile of its own,
                         the scores straight into the softmax state,
                         and a whole panel's rows' exponentials
                         together where no reference moves (I8's
                         mode 3 too). The same bits; a layer at 1,370
                         keys 5-6% faster on a Zen 3 (I8 3-5%).
     0.5.28 (2026-11-29) F32 products on AVX2 whose rows are at most
                         1024 wide and N >= 2 K (qkv, fc1) pack x for
                         the tiles, a tile's rows of one k together,
                         and take the LayerNorm before them as they
                         pack it (LN(x) no longer written out); the
                         f32 attention packs q so for 256 keys and
                         more. The same bits; those products 1.5-4%
                         faster on a Zen 3, one thread, attention at
                         1,370 keys 2-5%.
     0.5.27 (2026-11-29) Attention in blocks of rows on several
                         threads: whole heads but for the last, one a
                         thread, whose blocks the threads share (a
                         thread done early had waited for up to a
                         head). The same bits; a layer of DINOv2-S/14's
                         f32 attention at 518 px on two threads of a
                         Zen 3 0.90-0.96x.
     0.5.26 (2026-11-29) An I8 file's attention takes q kᵀ in int8
                         where the int8 dot product runs but not the
                         BF16 one (AVX2, AVX-512 VNNI before BF16, NEON
                         with sdot): q's rows on 7 bits, so that AVX2's
                         vpmaddubsw is exact; the softmax and P V stay
                         f32 (vit__att_mode 3). DINOv2-S/14 I8 at 518
                         px on a Zen 3 core about 10% faster. F32 row
                         blocks of x take a quarter of the core's L2
                         (x86's CPUID; 128-512 KiB), not 512 KiB
                         everywhere: the same bits, DINOv2-S/14 f32 at
                         518 px about 3% faster on a Zen 3 core.
     0.5.25 (2026-11-29) The F32 and BF16 MR x NR tiles (AVX2's and
                         NEON's only F32 tile) finish a whole panel's
                         last block with the epilogue's layer scale and
                         residual as they store, as the wide tiles do,
                         where it has no activation (the same bits). A
                         partial panel's rows go through two called
                         helpers, not loops GCC -O3 vectorised in each
                         of ~100 tiles: vit.h at -O3 compiles in 40%
                         less time (AVX-512 52.8 -> 31.3 s of CPU).
     0.5.24 (2026-11-29) BF16 weights are packed at load where no bf16
                         dot product runs too (AVX2, NEON, WebAssembly,
                         AVX-512 before BF16), and the f32 tile widens
                         each pair as it reads it: the same bits,
                         ViT-B/16 BF16 on a Zen 3 core 0.91x (B = 1)
                         and 0.90x (B = 8); loading takes the packing
                         (0.03 -> 0.14 s).
     0.5.23 (2026-11-29) I8 files may round x to 7 bits (__metadata__
                         activation_bits "7"; tools/export.py
                         --activation-bits 7; vit_tensor.act_bits): on
                         every build the same results, and on AVX2
                         without VNNI vpmaddubsw then takes u8 x by s8 w
                         directly (exact), all six rows of a tile in
                         one pass, ViT-B/16 at B = 1 on a Zen 3 core
                         0.32-0.37 -> 0.22-0.25 s, relative L2 to F32
                         2.4e-2 -> 3.5e-2. Other values are refused.
                         The F32 tile asks for the next block's lines
                         outside its inner k loop (the same bits).
     0.5.22 (2026-11-28) An I8 MLP's chunks reuse their thread's own
                         rows of the hidden features: ViT-B/16 I8 at
                         B = 8 31.6 MB of activations, not 37.7 (the
                         same bits). Compiles without a warning at -O3
                         (GCC 12, -Wall -Wextra -Wpedantic; make test
                         holds it): the linear and LayerNorm binds
                         refuse tensor names past 255 bytes (VIT_ERR_ARG)
                         where they were cut short.
                         The busy-core rule wants 10 switches and 600
                         a CPU second (not 2 and 150): stepped passes
                         among other engines had made it run two
                         threads as one (I8 at B = 1 0.041 s, not 0.023).
     0.5.21 (2026-11-28) GELU on AVX-512 from a table of cubics (32
                         intervals, vpermi2ps; tools/fit_gelu.py):
                         16 operations, not 27, its error 2.7e-7
                         max(1, |x|) (bits change by rounding). The
                         F32 and BF16 wide tiles add the epilogue's
                         layer scale and residual as they store; the
                         I8 attention's q and k quantised per head in
                         one reduction and through the packs; the BF16
                         and I8 wide tiles ask for the next panels as
                         they run, as F32's did (the same bits). ViT-B/16
                         on one thread, alternating pairs, before the
                         prefetch against 0.5.20: int8 at B = 1 0.980x,
                         bf16 at B = 8 0.990x, int8 at B = 8 0.997x; the
                         prefetch then: int8 0.959x and 0.982x, bf16
                         0.973x and 0.977x at B = 1 and 8. Where the
                         system keeps taking a core (getrusage's
                         involuntary switches), small products and
                         attentions run on the calling thread for a
                         while: two threads over one with a core busy,
                         int8 at B = 1 1.13 -> 1.04.
     0.5.20 (2026-11-28) An I8 qkv product writes the I8 attention's q
                         and k in int8 on each head's scale and v as bf16
                         from its tiles (heads of 64 on AVX-512, not with
                         qk-norm or rotary): the same bits, a third of the
                         bytes. An I8 MLP over many rows runs in chunks of
                         rows, fc1 then fc2, a chunk a thread (the same
                         bits). The F32 wide tile asks for its output's
                         lines before its k loop; I8's x quantised four
                         vectors at a time through saturating packs.
                         ViT-B/16 at B = 8 on one thread: int8 ~4.5%, f32
                         ~2% faster; int8 at B = 1 ~1%.
     0.5.19 (2026-11-28) The f32 attention's exponentials as 2^x of
                         scores in units of log2 e (vit__v_exp2: 10
                         operations, not 16; bits change by rounding).
                         LayerNorm's statistics in two sums each (bits
                         change by rounding), I8's row ranges in two
                         (same bits). After a caller sleeps waiting for a
                         worker, small loops run on one thread for a
                         while: with a core busy, int8 at B = 1 on two
                         threads 1.12 -> 1.06x its time on one.
     0.5.18 (2026-11-28) A BF16 attention reads q, k and v as bf16 from
                         the qkv product's tiles (not with qk-norm or
                         rotary): no conversion of them a head, half the
                         bytes (same bits; activations at ViT-B/16 B = 8
                         35 -> 30 MB). I8 products' outputs stay in the
                         caches up to 64 MiB (VIT__Y_STREAM_BYTES; was 4):
                         int8 at B = 8 about 4% faster on Zen 5. The
                         attention's rows asked for 16 ahead, not 8.
     0.5.17 (2026-11-28) A BF16 MLP's fc1 writes fc2's x as bf16 from
                         its tiles, and a BF16 attention its output rows
                         as the projection's x: no f32 hidden features or
                         heads' output in memory (the same bits;
                         activations at ViT-B/16 B = 8 46 -> 35 MB). The
                         BF16 attention's q kᵀ on two panels of keys a
                         tile; AVX-512's lowp exponentials by vrndscaleps
                         and vscalefps (bits change by rounding); heads in
                         blocks of rows claimed whole by threads; the
                         epilogues' activation inlined.
     0.5.16 (2026-11-28) On AVX-512 the F32 and BF16 tiles start a
                         later k block from the sums in y, so each output
                         is one sum over k in order whatever the blocks,
                         and a panel packed at load runs k blocks four
                         times as long (K = 768 in one call; I8's fc2 at
                         K = 3072 too, its column sums added): ViT-B/16
                         one thread f32 about 2% faster, bf16 2% (B = 8
                         3%). F32 and BF16 results there change by
                         rounding where K passed the old blocks. The f32
                         attention's wide tile pair no longer copies its
                         struct a step.
     0.5.15 (2026-11-28) A BF16 or I8 file's patch embedding keeps its
                         conv kernel in the file's dtype, as the matrix
                         of a dense weight, and its patches' product runs
                         on the dot-product tiles (tools/export.py writes
                         it I8 too; ViT-B/16, one thread: BF16 2.5 -> 1.1
                         ms, I8 2.7 -> 0.6 ms). The attention's q k^T
                         tiles (BF16, int8) put their scores straight into
                         the softmax state; the I8 finish takes a row's
                         two vectors at a time, its activation inlined.
     0.5.14 (2026-11-27) The I8 finish folds alpha into the column scales
                         and adds the bias in an fma (within 1e-6 of the
                         reference, as before); the int8 q k^T tile
                         starts its sums at the keys' zero-point terms
                         (the same bits; DINOv2-S/14 I8 at 518 px, one
                         thread: 0.354-0.359 -> 0.347-0.349 s).
     0.5.13 (2026-11-27) The I8 tiles' finish and the int8 attention's
                         q k^T tile read their fields once (a vector
                         store may alias anything, and GCC read them
                         again a row and vector: the q k^T tile 14.9%
                         -> 12-13.5% of the forward); the same bits
                         (DINOv2-S/14 I8 at 518 px, one thread: 0.352-
                         0.358 -> 0.347-0.351 s). The BF16 attention asks
                         for its q and K rows ahead of their rounding, as
                         the I8 one does.
     0.5.12 (2026-11-27) Wide tiles on AVX-512: 6 rows against two
                         packed panels of 32 columns (four vectors of w
                         and six broadcasts a k step, where 12 x 32 took
                         two and twelve) for F32, BF16 and I8 products and
                         the f32 attention's q k^T, the same bits (ViT-B/16
                         one thread: f32 0.344 -> 0.324-0.329 s, at B = 8
                         2.84-2.93 -> 2.62 s; I8 and BF16 products 3-5%).
                         The wide BF16 and I8 tiles ask for y's lines to
                         write before their k loop (the I8 finish had
                         waited on them); threads claim pairs of panels.
     0.5.11 (2026-11-27) An I8 file's attention takes q k^T in int8 on
                         vpdpbusd (each row of a head's q and k on its own
                         scale), P V still BF16, where no AMX tiles are
                         built; its q, k and v rows are asked for ahead of
                         their conversion (DINOv2-S/14 I8 at 518 px, one
                         thread: 0.39 -> 0.365 s). A thread packs a head's
                         K and V once a call, not once a claim (518 px on
                         two threads: 3%).
     0.5.10 (2026-11-27) The thread pool's caller waits only for the
                         workers that joined a loop, withdrawing one that
                         had not by the time the blocks ran out (with a
                         core busy, I8 ViT-B/16 at B = 1 on two threads
                         1.10-1.13x its one-thread time -> 1.04-1.07x).
                         Loading: the F16/BF16 finiteness and I8 -128
                         scans a 64-bit word at a time, and a weight packed
                         in its own pages checked after they are copied,
                         not read first (ViT-B/16 F32 0.25 -> 0.20 s,
                         BF16 0.17 -> 0.10 s, I8 0.1 -> 0.06 s). The
                         CLI keeps the file's layout for fewer than 16
                         passes (one image: F32 0.41 -> 0.25 s). A
                         batch's patch embedding is one product (at B = 8
                         on two threads 13.8 -> 10.2 ms; the same bits).
     0.5.9 (2026-11-27)  F32 products whose x rows are too wide for a row
                         block within 512 KiB (fc2's at K = 3072) take row
                         blocks of VIT__MC rows, x in L3, where each panel
                         swept all of x (ViT-B/16 at batch 8: 1.4% faster
                         on one thread, 2.2% on two; fc2 7%). Row blocks
                         fence their streamed stores as panels do. The
                         same bits.
     0.5.8 (2026-11-27)  Activations a product reads as its x are laid a
                         cache line wider where their rows are a multiple of
                         2 KiB (the MLP's hidden features; the LayerNorm's
                         and the heads' output at widths like 1,024), so
                         the twelve rows an F32 tile broadcasts from no
                         longer share one set of L1 (ViT-B/16 f32 4% and a
                         4-layer ViT-L/16 8% faster on Zen 4). The F32
                         tiles count the next block's prefetch lines
                         themselves (1.5%). A product's row blocks split M
                         evenly, the last one no longer short (batch 8 on
                         two threads 1-3% faster). The same bits.
     0.5.7 (2026-11-27)  BF16 and I8 products of weights packed at load take
                         x's rows in blocks of 1 MiB against every panel
                         once x is past L2, where each panel read all of x
                         from L3 (ViT-B/16 at batch 8, AMX: BF16 14% and I8
                         10% faster on one thread, 12% and 16% on two; the
                         vdpbf16ps and vpdpbusd tiles 8%; the same bits). The
                         BF16 attention's P V goes through vit__matmul like
                         every other product (x converted by its caller, a
                         last partial panel packed): its own two loops gone.
     0.5.6 (2026-11-27)  The f32 attention takes q kT and the softmax in one
                         pass too: the F32 tiles' scores straight to f32
                         exponentials against the same lazy reference, P V
                         on them, rows scaled by post / sum after (one
                         layer at 1,370 tokens 8% faster; DINOv2-S/14 at
                         518 px f32 6% on one thread). The attention's row
                         pass loads the tiles' buffer with plain loads and
                         selects the lanes past the keys in registers.
     0.5.5 (2026-11-26)  The BF16 attention takes q kT and the softmax in one
                         pass: scores from the tiles straight to bf16
                         exponentials against a reference that moves only
                         16 past it (a lazy online softmax), relative
                         position bias and kept maps included (518 px BF16
                         17% and I8 14% faster on one thread). Loading a
                         file that packs its weights asks Linux for their
                         pages' private copies in one call per weight
                         (MADV_POPULATE_WRITE): ViT-B/16 F32 0.30-0.40 ->
                         0.20-0.25 s. BF16 and I8 blocks normalise x as
                         the qkv and fc1 products convert it (the same
                         bits, LN(x) not written out).
     0.5.4 (2026-11-26)  F32 weights packed at load: where a block of at
                         least VIT__MC / 3 rows of x fits in VIT__MC_BYTES
                         (512 KiB), each block runs against every panel,
                         and threads take blocks of rows (DINOv2-S/14 at
                         518 px f32 6% faster on one thread, ViT-B/16 at
                         batch 8 8% on two; the same bits). The BF16
                         attention's exponentials by a cheaper exp for
                         values rounded to bf16 after (518 px BF16 and I8
                         7% faster).
     0.5.3 (2026-11-26)  A file's F32 dense weights are packed in place at
                         load, as BF16 and I8 are (ViT-B/16 f32 at batch 1
                         9% faster, the same bits; loading 0.3 s instead of
                         0.03 s); vit_load_opts.keep_layout loads without
                         packing. A tensor read both as a dense weight and
                         as another part is refused. The F32 tile takes
                         vit__tl and asks for the next block's lines during
                         its k loop, one every 8 k; packed panels of more
                         than 2 VIT__MC rows run their k blocks over VIT__MC
                         rows at a time (the same bits; DINOv2-S/14 at
                         518 px f32 6% faster).
     0.5.2 (2026-11-26)  Scratch rows padded for AMX only where AMX is built
                         (an AArch64/WebAssembly overflow in test_quant).
                         f32 attention: K and V packed once a head, query
                         blocks sized for L2 past 1 MiB of a head's scores;
                         vit_k_attend's vt unused (may be NULL). BF16: the
                         epilogue in the AMX tiles' finish, rows to bf16 by
                         vcvtneps2bf16, attention with a
                         power-of-two scale folded into q and unnormalised
                         exponentials (P V's rows scaled after). Softmax:
                         the max in four chains, exp's n by one fma.
     0.5.1 (2026-11-26)  A -O1 build with AMX no longer faults on its first
                         BF16 or I8 product (the tile configuration is
                         constant data). AMX products: x's rows zero-padded
                         to whole tiles, the next panel prefetched, each
                         32-row block finished during the next one's tiles;
                         the lowp attention's rows padded likewise. GELU's
                         erf a rational fit (tools/fit_erf.py), softmax rows'
                         tails by masked loads.
     0.5.0 (2026-11-26)  The newest ViTs, exact against timm: DINOv3
                         (RotaryEmbeddingDinoV3, pairs in halves:
                         vit_k_rope_half), Perception Encoder core (its
                         8-head attention pool over every token), NAVER's
                         RoPE-Axial and RoPE-Mixed (learned frequencies)
                         with and without a position embedding, timm's RoPE
                         ViTs with registers; vit_config's rope fields and
                         vit_rope, pool_heads and pool_prefix; each Eva
                         name's settings from its entrypoint, model_args
                         read over them. transformers' BEiT and Data2Vec
                         vision. BF16 and I8 products and BF16 attention on
                         Intel's AMX tiles where the build targets them
                         (VIT_NO_AMX keeps them off).
     0.4.0 (2026-11-26)  Explanations: vit_model_reverse (the gradient of
                         sum(out * seed) with respect to every block's
                         probabilities and tokens and the pixels) and
                         vit_explain (grad rollout, Chefer's relevance,
                         LeGrad, Grad-CAM, saliency, gradient x input,
                         integrated gradients), each equal to its authors'
                         code; reverse kernels vit_k_*_back with _ref twins.
                         A config.json's architecture is the authority: a
                         name vit.h does not run is refused, saying why (a
                         Perception Encoder read as SigLIP was 21% off),
                         and timm's model_args that contradict the weights
                         are refused. I8: rows holding a NaN or an Inf give
                         NaN, a range past FLT_MAX is quantised, row scales
                         above FLT_MAX / 127 and I8 outside linear layers
                         are refused, hand-built quantised weights are
                         checked; no undefined behaviour on BF16 forwards.
                         vit_tensor's panel and sums are one private record
                         now, vit_tensor.pack, that only the loader makes.
                         BEiT and BEiT v2 (relative position bias), EVA-02
                         Ti to L and EVA-CLIP's towers (rotary embedding,
                         LayerNorms inside the attention and the SwiGLU),
                         EVA-01 giant: exactly as timm's, in F32, BF16, I8,
                         with their attention maps and explanations.
     0.3.3 (2026-11-26)  Where vdpbf16ps runs, the attention of BF16 and I8
                         files runs its two products in BF16 (1.5x faster on
                         Zen 4). A file's BF16 and I8 dense weights are
                         packed in place at load into the panels the
                         dot-product tiles read (vit_tensor.panel; I8 keeps
                         its column sums, vit_tensor.sums): ViT-B/16 at
                         batch 1 5% (I8) to 9% (BF16) faster, loading slower
                         by the packing. The file is mapped writable and
                         private; F32 pages stay shared. The I8 finish does
                         the epilogue and streams a y of more than 4 MB
                         past the caches (batch 8: 2-5% faster). Saving
                         writes through a symbolic link, keeps the replaced
                         file's mode and owner, and takes any name the
                         system does (the temporary file's name is short);
                         a config.json beside a model in a folder of more
                         than 1 KB is read, no longer skipped.
     0.3.2 (2026-11-25)  I8 products with VNNI twice as fast: GCC 12 had
                         spilled the AVX-512 tile's accumulators inside its
                         k loop (81-87% of vpdpbusd's peak now, from 42%).
                         BF16 and I8 panels packed through the register
                         transpose (BF16 85-91% of vdpbf16ps's peak).
     0.3.1 (2026-11-24)  I8 products on AVX2 without VNNI run an exact
                         vpmaddubsw tile (1.3x F32 on ViT-B/16); BF16 and I8
                         panels widened in registers (BF16 level with F32 on
                         AVX2). The loader refuses I8 values of -128 (the
                         format is -127..127).
     0.3.0 (2026-11-23)  The ViTs people download: DeiT (distilled, III),
                         DINOv2 (registers, SwiGLU), CLIP, SigLIP, qk-norm,
                         read in timm's and transformers' names with their
                         config.json and preprocessing (vit_model_preprocess;
                         PIL's bicubic, squash, crops); token outputs and
                         vit_model_prefix_tokens. BF16 and I8 dense weights
                         kept as stored and multiplied in one GEMM
                         (vdpbf16ps, vpdpbusd, sdot where targeted). vit.h's
                         own thread pool replaces OpenMP (spins briefly, then
                         sleeps). Untrusted input: image structure checked
                         before stb_image, NaN/Inf weights refused, binary
                         search of tensor names, duplicate JSON keys refused,
                         strict .npy headers, files written atomically,
                         vit_load_opts.read_whole. Breaking: the wide kernels
                         take shape structs (vit_k_scores and vit_k_attend
                         vit_heads_shape, vit_k_aft vit_aft_shape,
                         vit_k_dwconv vit_conv_shape, vit_k_patch_conv
                         vit_patch_shape).
     0.2.0 (2026-11-23)  One kind registry (VIT_KINDS): a module is its
                         section and one line; metadata read from per-kind
                         schema tables; vit_model_describe and
                         vit_model_input_shape. Breaking: attention maps and
                         gates leave the params structs for a last `attn`
                         argument of every vit_<name>_forward; quirk is
                         scale_after_softmax; vit_cls002_* is
                         vit_sdsa_classifier_*; namings say what they are
                         (patchify, einops, proj_qkv, seq_layers, seq_mlp,
                         conv_proj, default) and the seed strings of older
                         files are still read.
     0.1.1 (2026-11-23)  GEMM panels packed through 8x8 register transposes
                         (85-90% of the FMA peak on ViT-B shapes); a
                         few-rows product where it beats the GEMM; short softmax rows
                         in blocks, faster outlook fold; small kernel calls
                         stay out of OpenMP; vector NaN/Inf input check;
                         16-bit PNM images and PNM header numbers past
                         INT_MAX refused (stb_image 2.27 overrun, overflow);
                         image preprocessing sizes itself in a counting arena;
                         GELU/ReLU and residual adds fused into the GEMM's
                         epilogue; attention keeps one head's scores per
                         thread unless maps are requested (ViT-B/16 at B = 8:
                         37 MB of activations instead of 56); a narrow GEMM
                         tile for panels of <= one vector of columns;
                         vit_model_set_image_size_ex resizes position
                         embeddings as timm and transformers do, and AUTO
                         picks the file's library.
     0.1.0 (2026-11-22)  first release: arenas, SIMDe kernels with scalar
                         twins, SDPA/MHA/MLP/encoder block/patch embedding,
                         torchvision, seed-001 and seed-004 ViTs, safetensors
                         and npy I/O; the other seed modules with their gates
                         and attention maps: squeeze-excitation (seed 000),
                         seed 002's self-attention and classifier, EMSA,
                         shuffle attention, SGE, AFT full/simple/local and
                         outlook attention (seed 003); packed-panel GEMM;
                         attention maps, rollout and PNG output; image
                         loading and torchvision preprocessing; timm and
                         Hugging Face checkpoints without an export step.

   ------------------------------------------------------------------------------
   This software is available under 2 licenses -- choose whichever you prefer.
   ------------------------------------------------------------------------------
   ALTERNATIVE A - MIT License
   Copyright (c) 2026 the vit.h authors
   Permission is hereby granted, free of charge, to any person obtaining a copy of
   this software and associated documentation files (the "Software"), to deal in
   the Software without restriction, including without limitation the rights to
   use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies
   of the Software, and to permit persons to whom the Software is furnished to do
   so, subject to the following conditions:
   The above copyright notice and this permission notice shall be included in all
   copies or substantial portions of the Software.
   THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
   IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
   FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
   AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
   LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
   OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
   SOFTWARE.
   ------------------------------------------------------------------------------
   ALTERNATIVE B - Public Domain (www.unlicense.org)
   This is free and unencumbered software released into the public domain.
   Anyone is free to copy, modify, publish, use, compile, sell, or distribute this
   software, either in source code form or as a compiled binary, for any purpose,
   commercial or non-commercial, and by any means.
   In jurisdictions that recognize copyright laws, the author or authors of this
   software dedicate any and all copyright interest in the software to the public
   domain. We make this dedication for the benefit of the public at large and to
   the detriment of our heirs and successors. We intend this dedication to be an
   overt act of relinquishment in perpetuity of all present and future rights to
   this software under copyright law.
   THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
   IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
   FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
   AUTHORS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN
   ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION
   WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
   ------------------------------------------------------------------------------
*/
