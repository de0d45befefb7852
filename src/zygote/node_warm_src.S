/* The fast path's node preload (kernels/node_warm.js), embedded in
 * hutch-zygote; a node cell writes it into its own /tmp, and node removes
 * it as it loads it (src/zygote/node.c). */
	.section .rodata
	.global hutch_zygote_node_warm_src
hutch_zygote_node_warm_src:
	.incbin "kernels/node_warm.js"
	.byte 0
	.section .note.GNU-stack,"",@progbits
